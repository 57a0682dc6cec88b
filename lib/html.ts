/** Text made safe to put in HTML, between tags or in a quoted attribute: the pages the service writes without a template. */
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
