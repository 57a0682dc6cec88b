import type { Static } from 'typebox'
import type { InventoryEntry } from '../../db/stores/inventory-rules.ts'
import type { EventApplication, EventRender, EventToken } from '../../db/stores/webhooks.ts'
import type { Urls } from '../../lib/urls.ts'
import { credentialView, type Credential } from './administration.ts'
import { createViews, moment } from './discussions/views.ts'

// What a webhook's event carries as `data` (docs/decisions.md, "Webhooks"): the v1 JSON the API
// returns for its resource, made by the same views. A discussion created carries its opening post
// (as the API's answer to the create does); a token, or an application authorized, is shown as
// the credentials inventory shows it (routes/api/administration.ts). Given to the stores' event
// sink by app.ts (plugins/stores.ts, webhookStore).

/** An inventory entry of an event: never the inventory's own read, so no owner id and no address of last use. */
function entry(owner: { email: string; name: string }, fields: Pick<InventoryEntry, 'id' | 'kind' | 'name' | 'access' | 'createdAt' | 'lastUsedAt' | 'expiresAt' | 'state'>): InventoryEntry {
  return { ...fields, ownerId: 0, owner: owner.email, ownerName: owner.name, lastUsedFrom: null, revocable: true }
}

const tokenEntry = (token: EventToken) =>
  entry(token.owner, { id: `pat-${token.id}`, kind: 'personal_token', name: token.name, access: token.access, createdAt: token.createdAt, lastUsedAt: token.lastUsedAt, expiresAt: token.expiresAt, state: token.revokedAt ? 'revoked' : 'active' })

const applicationEntry = (application: EventApplication) =>
  entry(application.owner, { id: `oauth-${application.grantId}`, kind: 'oauth', name: application.name, access: application.access, createdAt: application.createdAt, lastUsedAt: null, expiresAt: null, state: 'active' })

/** The renderer of events over the service's addresses. */
export function eventRender(urls: Urls): EventRender {
  const views = createViews(urls)
  return (permalink, event): unknown => {
    switch (event.type) {
      case 'discussion.created':
        return { ...views.discussion(permalink, event.discussion), comments: [views.comment(permalink, event.discussion.number, event.comment, { attachments: event.attachments })] }
      case 'comment.created':
        return views.comment(permalink, event.discussion.number, event.comment, { attachments: event.attachments })
      case 'token.created':
      case 'token.revoked':
      case 'token.leaked':
        return credentialView(tokenEntry(event.token)) satisfies Static<typeof Credential>
      case 'application.authorized':
        return credentialView(applicationEntry(event.application))
      case 'customer.erased':
        return { customer_id: event.erasure.customerId, erased_customer_id: event.erasure.erasedId, erased_at: moment(event.erasure.at), deleted: event.erasure.deleted, anonymised: event.erasure.anonymised, others: event.erasure.others }
      case 'rule.fired':
        return { ...views.discussion(permalink, event.discussion), rule: event.rule }
      case 'sla.warning':
      case 'sla.breached':
        return { ...views.discussion(permalink, event.discussion), alert: { kind: event.alert.kind, due_at: moment(event.alert.due) } }
      default:
        return views.discussion(permalink, event.discussion)
    }
  }
}
