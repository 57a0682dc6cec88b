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
  const open = () => {
    source = new EventSource(live.dataset.live)
    source.addEventListener('change', refresh)
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
