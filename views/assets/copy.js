// The Copy button beside a new token. Without JavaScript the value can still be selected by hand.
for (const button of document.querySelectorAll('[data-copy]')) {
  const field = document.getElementById(button.dataset.copy)
  if (!field || !navigator.clipboard) continue
  button.hidden = false
  button.addEventListener('click', async () => {
    await navigator.clipboard.writeText(field.value)
    button.textContent = 'Copied'
  })
}
