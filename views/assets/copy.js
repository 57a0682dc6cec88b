// The Copy button beside a new token, a legacy token or the recovery codes. Without JavaScript
// the text can still be selected by hand.
for (const button of document.querySelectorAll('[data-copy]')) {
  const field = document.getElementById(button.dataset.copy)
  if (!field || !navigator.clipboard) continue
  button.hidden = false
  button.addEventListener('click', async () => {
    await navigator.clipboard.writeText('value' in field ? field.value : field.innerText)
    button.textContent = 'Copied'
  })
}
