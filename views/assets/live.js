// Live pages (routes/web/live.ts): the queue and a discussion's page follow the site's changes.
// On each change told by the stream, the page (its own address, data-page, even when it was
// answered to a form) is read again as a reload would, and its parts marked data-live-part are
// put in place of the old ones; forms are not parts, so nothing typed is lost. On a discussion's
// page, a reply by someone else since it was loaded is announced above the reply form. A hidden
// tab closes its stream (a browser keeps six connections to a host, and every open stream holds
// one) and, shown again, reads the page once and listens again. Without JavaScript (or
// EventSource) a reload does the same.
const live = document.querySelector('[data-live]')
if (live && 'EventSource' in window) {
  let busy = false
  let again = false
  let source = null
  const refresh = async () => {
    if (busy) return void (again = true)
    busy = true
    try {
      const answer = await fetch(live.dataset.page || location.href, { headers: { accept: 'text/html' }, credentials: 'same-origin' })
      if (!answer.ok || answer.redirected) return
      const fresh = new DOMParser().parseFromString(await answer.text(), 'text/html')
      for (const part of document.querySelectorAll('[data-live-part]')) {
        const next = fresh.querySelector(`[data-live-part="${part.dataset.livePart}"]`)
        if (next) part.replaceWith(document.importNode(next, true))
      }
      announce()
    } catch {
      // A failed read leaves the page as it was; the next change tries again.
    } finally {
      busy = false
      if (again) {
        again = false
        void refresh()
      }
    }
  }
  // A discussion's page: who else is on it, and who is writing a reply (plugins/presence.ts).
  const presence = document.querySelector('[data-presence]')
  const open = () => {
    source = new EventSource(presence ? `${live.dataset.live}?discussion=${presence.dataset.discussion}` : live.dataset.live)
    source.addEventListener('change', refresh)
    source.addEventListener('presence', (event) => showPresence(presence, JSON.parse(event.data).others))
  }
  const typing = document.querySelector('form[data-reply] textarea[name="body"]')
  if (presence && typing) {
    let told = 0
    typing.addEventListener('input', () => {
      if (Date.now() - told < Number(presence.dataset.every)) return
      told = Date.now()
      const csrf = typing.form.elements._csrf.value
      void fetch(presence.dataset.presence, { method: 'POST', credentials: 'same-origin', headers: { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ _csrf: csrf }) }).catch(() => {})
    })
  }
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) {
      source?.close()
      source = null
    } else if (!source) {
      open()
      void refresh()
    }
  })
  if (!document.hidden) open()
}

/** Names who replied since the page was loaded (the comments past the form's `seen`, written by others). */
function announce() {
  const form = document.querySelector('form[data-reply]')
  const notice = document.querySelector('[data-replied-notice]')
  if (!form || !notice) return
  const seen = Number(form.elements.seen.value)
  const others = [...document.querySelectorAll('[data-comment]')].filter((c) => Number(c.dataset.comment) > seen && c.dataset.author !== form.dataset.me)
  if (others.length === 0) return
  const names = [...new Set(others.map((c) => c.dataset.authorName))].join(', ')
  notice.textContent = `${names} wrote since you opened this page: read it above before you send yours.`
  notice.hidden = false
}

/** Says who else is on the page, and who of them is writing a reply; nothing when nobody is. */
function showPresence(element, others) {
  element.textContent = others.map((p) => `${p.name} is ${p.replying ? 'replying' : 'viewing this discussion'}`).join('; ')
  element.hidden = others.length === 0
}
