// The values some columns hold, the same on both engines (each schema checks them): the roles on a
// site, a token's access, a discussion's states, where a comment came from, and what the security
// log records.

export const roles = ['supporter', 'customer'] as const
export type Role = (typeof roles)[number]

// A person's part in a site's staff (docs/decisions.md, "Collaborators"): an administrator also runs
// the site, a supporter works on the discussions, a collaborator reads them and writes internal
// notes only. Kept as the staff membership's two flags (administrator, collaborator), never both.
export const staffRoles = ['administrator', 'supporter', 'collaborator'] as const
export type StaffRole = (typeof staffRoles)[number]

// Who may make read-and-write personal tokens on a site (its token policy).
export const writeTokenRules = ['everyone', 'administrators'] as const
export type WriteTokenRule = (typeof writeTokenRules)[number]

// The kinds of second factor an account may have.
export const factorKinds = ['totp', 'passkey'] as const
export type FactorKind = (typeof factorKinds)[number]

export const accessLevels = ['read', 'write'] as const
export type Access = (typeof accessLevels)[number]

// merged: gone into another discussion of its site (issue 71), whose number it keeps (merged_into).
export const discussionStates = ['new', 'open', 'resolved', 'deleted', 'spam', 'merged'] as const
export type DiscussionState = (typeof discussionStates)[number]

export const commentVias = ['api', 'web', 'email', 'mcp', 'rule'] as const
export type CommentVia = (typeof commentVias)[number]

// What leaves the process through the outbox (db/stores/outbox.ts), and where each message is.
// reply_mail: a staff reply mailed to its customer; acknowledgement: the automatic answer to a new discussion by mail;
// sign_in_link and confirmation: a customer's link to sign in, or to post what they wrote as a visitor (db/stores/customer-links.ts);
// webhook: an event posted to one of the site's webhook endpoints; webhook_disabled: the mail telling an administrator that one was switched off (db/stores/webhooks.ts).
// notification: a supporter's mail about the queue (db/stores/notifications.ts).
// invitation: the mail inviting someone to a site's staff (db/stores/invitations.ts).
// password_reset: a supporter's link to set a new password they forgot (db/stores/customer-links.ts).
// mailbox_problem: the mail telling an administrator that a connected mailbox can no longer sign in (db/stores/mail-connections.ts).
/** How a discussion's participant joined (db/schema, participants): copied on a customer's mail, or added by the team. */
export const participantSources = ['mail', 'team'] as const
// What a site says of a sender (db/stores/senders.ts): its mail is never spam, or always is.
export const senderVerdicts = ['allow', 'block'] as const
export type SenderVerdict = (typeof senderVerdicts)[number]
export type ParticipantSource = (typeof participantSources)[number]

export const outboxKinds = ['reply_mail', 'acknowledgement', 'sign_in_link', 'confirmation', 'webhook', 'webhook_disabled', 'notification', 'mailbox_problem', 'password_reset', 'invitation', 'data_export'] as const
export type OutboxKind = (typeof outboxKinds)[number]
// What a mailed link does when followed (db/stores/customer-links.ts): a customer's sign-in, a visitor's discussion, a supporter's forgotten password, a customer's copy of their data.
export const linkPurposes = ['sign_in', 'discussion', 'password_reset', 'data_export'] as const
export type LinkPurpose = (typeof linkPurposes)[number]
// The events a webhook endpoint can ask for (docs/decisions.md, "Webhooks"): each posts the v1 JSON of its resource.
export const webhookEvents = [
  'discussion.created',
  'discussion.updated',
  'discussion.deleted',
  'discussion.restored',
  'discussion.spam',
  'discussion.merged',
  'comment.created',
  'sla.warning',
  'sla.breached',
  'satisfaction.rated',
  'rule.fired',
  'token.created',
  'token.revoked',
  'token.leaked',
  'application.authorized',
  'customer.erased',
] as const
export type WebhookEvent = (typeof webhookEvents)[number]
// What the change feed tells of (db/stores/changes.ts; docs/decisions.md, "Safe retries, cursors and the change feed"):
// the discussion events of the webhooks, one row each, in commit order.
export const changeKinds = ['discussion.created', 'discussion.updated', 'discussion.deleted', 'discussion.restored', 'discussion.spam', 'discussion.merged', 'comment.created', 'customer.erased'] as const
export type ChangeKind = (typeof changeKinds)[number]
// What erasing a customer does to the discussions they started (issue 74; db/stores/erasure.ts):
// keeps them with their text and their name taken out, or deletes them.
export const erasureModes = ['anonymise', 'delete'] as const
export type ErasureMode = (typeof erasureModes)[number]
export const outboxStates = ['queued', 'sent', 'failed'] as const
export type OutboxState = (typeof outboxStates)[number]

// The security log (issue 18; docs/decisions.md, "Token lifecycle"): what happened to an account
// and its tokens, appended and never changed, pruned after SERVICE_SECURITY_LOG_DAYS. No secret.
export const securityKinds = [
  'token_created',
  'token_revoked',
  'token_new_address',
  'legacy_token_reset',
  'sign_in_succeeded',
  'sign_in_failed',
  'lockout',
  'staff_added',
  'staff_removed',
  'account_disabled',
  'password_set',
  'oauth_authorized',
  'oauth_revoked',
  'administrator_added',
  'administrator_removed',
  'policy_changed',
  'token_shortened',
  'confirmed',
  'factor_added',
  'factor_removed',
  'recovery_code_used',
  'second_factor_failed',
  'codes_unlocked',
  'role_changed',
  'provider_linked',
  'signed_out_by_provider',
] as const
export type SecurityKind = (typeof securityKinds)[number]
