// Passkeys (WebAuthn) on the pages that offer one, with @simplewebauthn/browser (webauthn.js, served
// by the service). The button asks the browser, then its answer goes in the form's `passkey` field
// and the form is sent as any other. Without JavaScript or WebAuthn the button stays hidden and
// the page's other ways remain.
const webauthn = globalThis.SimpleWebAuthnBrowser

for (const form of document.querySelectorAll('[data-passkey-form]')) {
  const button = form.querySelector('button[data-ceremony]')
  const status = form.querySelector('[data-passkey-status]')
  if (!webauthn || !webauthn.browserSupportsWebAuthn()) continue
  button.hidden = false
  button.addEventListener('click', async () => {
    status.hidden = true
    try {
      const optionsJSON = JSON.parse(button.dataset.options)
      const answer = button.dataset.ceremony === 'register' ? await webauthn.startRegistration({ optionsJSON }) : await webauthn.startAuthentication({ optionsJSON })
      form.elements.passkey.value = JSON.stringify(answer)
      form.submit()
    } catch (error) {
      status.textContent =
        error && error.name === 'NotAllowedError'
          ? 'No passkey was used: it was cancelled, or took too long. Try again.'
          : `The passkey did not work${error && error.message ? `: ${error.message}` : '.'}`
      status.hidden = false
    }
  })
}
