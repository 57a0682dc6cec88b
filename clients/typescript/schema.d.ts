// Generated from the Service Desk OpenAPI document by openapi-typescript: do not edit.
// Regenerate with `npm run client:generate` (tools/client/main.ts).

export interface paths {
    "/{site}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The site, with links to its discussions and categories */
        get: operations["getSite"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        /** The site, with links to its discussions and categories */
        head: operations["getSiteHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/personal_tokens/self": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The personal token of this request: its name, access, expiry and the addresses it was used from
         * @description Only a personal token reads this; other credentials get 404.
         */
        get: operations["getCurrentPersonalToken"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        /**
         * The personal token of this request: its name, access, expiry and the addresses it was used from
         * @description Only a personal token reads this; other credentials get 404.
         */
        head: operations["getCurrentPersonalTokenHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/discussions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List discussions in every state but deleted */
        get: operations["listDiscussions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        /** List discussions in every state but deleted */
        head: operations["listDiscussionsHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/discussions/new": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List new discussions */
        get: operations["listNewDiscussions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        /** List new discussions */
        head: operations["listNewDiscussionsHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/discussions/open": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List open discussions */
        get: operations["listOpenDiscussions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        /** List open discussions */
        head: operations["listOpenDiscussionsHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/discussions/resolved": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List resolved discussions */
        get: operations["listResolvedDiscussions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        /** List resolved discussions */
        head: operations["listResolvedDiscussionsHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/discussions/deleted": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List deleted discussions */
        get: operations["listDeletedDiscussions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        /** List deleted discussions */
        head: operations["listDeletedDiscussionsHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Search the discussions: words, phrases, exclusions and filters */
        get: operations["searchDiscussions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        /** Search the discussions: words, phrases, exclusions and filters */
        head: operations["searchDiscussionsHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/discussions/{number}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Show a discussion with its comments */
        get: operations["getDiscussion"];
        /** Change the title, visibility, category, owner or tags of a discussion */
        put: operations["updateDiscussion"];
        post?: never;
        /** Delete a discussion (it moves to the deleted state; restore brings it back) */
        delete: operations["deleteDiscussion"];
        options?: never;
        /** Show a discussion with its comments */
        head: operations["getDiscussionHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/discussions/{number}/comments": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the comments of a discussion, oldest first */
        get: operations["listComments"];
        put?: never;
        /**
         * Reply to a discussion, as yourself or on behalf of a customer
         * @description A supporter's reply moves a new discussion to open (an internal note does not); a customer's reply moves a resolved one to open.
         */
        post: operations["createComment"];
        delete?: never;
        options?: never;
        /** List the comments of a discussion, oldest first */
        head: operations["listCommentsHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/discussions/{number}/comments/{comment}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Show one comment */
        get: operations["getComment"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        /** Show one comment */
        head: operations["getCommentHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/categories/{id}/discussions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the discussions of a category in every state but deleted */
        get: operations["listCategoryDiscussions"];
        put?: never;
        /** Create a discussion in a category, as yourself or on behalf of a customer */
        post: operations["createDiscussion"];
        delete?: never;
        options?: never;
        /** List the discussions of a category in every state but deleted */
        head: operations["listCategoryDiscussionsHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/discussions/{number}/resolve": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Resolve a discussion */
        post: operations["resolveDiscussion"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/{site}/discussions/{number}/unresolve": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Unresolve a discussion: resolved moves to open */
        post: operations["unresolveDiscussion"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/{site}/discussions/{number}/toggle": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Toggle a discussion between resolved and open */
        post: operations["toggleDiscussion"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/{site}/discussions/{number}/restore": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Restore a deleted discussion to the state it was deleted from */
        post: operations["restoreDiscussion"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/{site}/discussions/{number}/change_category": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Move a discussion to another category of the site */
        post: operations["changeDiscussionCategory"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/{site}/discussions/{number}/assign": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Give a discussion to a supporter of the site (its owner), or to nobody */
        post: operations["assignDiscussion"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/{site}/categories": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the categories of the site, by name */
        get: operations["listCategories"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        /** List the categories of the site, by name */
        head: operations["listCategoriesHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/categories/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Show a category */
        get: operations["getCategory"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        /** Show a category */
        head: operations["getCategoryHead"];
        /** Give its new discussions to the supporters in turn, or not (administrators) */
        patch: operations["changeCategory"];
        trace?: never;
    };
    "/{site}/changes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** What changed in the site's discussions since a cursor, in commit order */
        get: operations["listChanges"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        /** What changed in the site's discussions since a cursor, in commit order */
        head: operations["listChangesHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/discussions/{number}/participants": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Whom the discussion's public replies copy by mail, besides its customer */
        get: operations["listParticipants"];
        put?: never;
        /** Copy someone on the discussion's public replies; 201 when added, 200 when they were already */
        post: operations["addParticipant"];
        delete?: never;
        options?: never;
        /** Whom the discussion's public replies copy by mail, besides its customer */
        head: operations["listParticipantsHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/discussions/{number}/participants/{email}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Stop copying someone on the discussion's replies */
        delete: operations["removeParticipant"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/{site}/uploads": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Upload files for a comment to carry (multipart/form-data, one or more file parts)
         * @description Each file is kept a day unless a comment names it in `uploads`. A file over the limit (10 MB by default), more than 10 files, or a site out of space is refused with 413 and nothing is kept.
         */
        post: operations["createUploads"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/{site}/attachments/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Download an attachment: its bytes, with its detected type
         * @description Raster images (PNG, JPEG, GIF, WebP) are `inline`; everything else is `attachment`. The ETag is the SHA-256 of the bytes. An upload no comment carries yet is its uploader's only.
         */
        get: operations["getAttachment"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        /**
         * Download an attachment: its bytes, with its detected type
         * @description Raster images (PNG, JPEG, GIF, WebP) are `inline`; everything else is `attachment`. The ETag is the SHA-256 of the bytes. An upload no comment carries yet is its uploader's only.
         */
        head: operations["getAttachmentHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/credentials": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The site's credentials inventory: personal tokens, applications and legacy tokens, active or ended in the last 30 days */
        get: operations["listCredentials"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        /** The site's credentials inventory: personal tokens, applications and legacy tokens, active or ended in the last 30 days */
        head: operations["listCredentialsHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/credentials/revoke": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Revoke personal tokens and applications of the site, all or none, telling each owner the reason */
        post: operations["revokeCredentials"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/{site}/policy": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The site's token policy */
        get: operations["getPolicy"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        /** The site's token policy */
        head: operations["getPolicyHead"];
        /** Change the site's token policy; a shorter lifetime that leaves tokens over it answers 409 with a dry run until existing_tokens says what to do */
        patch: operations["changePolicy"];
        trace?: never;
    };
    "/{site}/mailboxes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The site's mailboxes: the addresses it takes mail at */
        get: operations["listMailboxes"];
        put?: never;
        /**
         * Take the mail of an address: mail to it opens discussions of the site
         * @description Its mail arrives from an IMAP mailbox (`imap`), or at the built-in receiver (SERVICE_MAIL_RECEIVER) through an MX record or a forward. An address is one site’s only: another’s is a 409.
         */
        post: operations["addMailbox"];
        delete?: never;
        options?: never;
        /** The site's mailboxes: the addresses it takes mail at */
        head: operations["listMailboxesHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/mailboxes/{address}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Stop taking mail at an address; the discussions its mail made stay */
        delete: operations["removeMailbox"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/{site}/webhooks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The site's webhooks: where its events are posted */
        get: operations["listWebhooks"];
        put?: never;
        /** Post the events named to an address; the answer holds the signing secret, shown this once */
        post: operations["addWebhook"];
        delete?: never;
        options?: never;
        /** The site's webhooks: where its events are posted */
        head: operations["listWebhooksHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/webhooks/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A webhook */
        get: operations["getWebhook"];
        put?: never;
        post?: never;
        /** Remove a webhook, its queued events and its log */
        delete: operations["removeWebhook"];
        options?: never;
        /** A webhook */
        head: operations["getWebhookHead"];
        /** Change what is given: address, events, description, internal notes, switched on or off */
        patch: operations["changeWebhook"];
        trace?: never;
    };
    "/{site}/webhooks/{id}/rotate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** A new signing secret, shown this once; the old one signs beside it for a day */
        post: operations["rotateWebhookSecret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/{site}/webhooks/{id}/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Send the test event (webhook.test) now, switched on or off (at most 10 sends by hand a minute) */
        post: operations["testWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/{site}/webhooks/{id}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The tries of the last three days, newest first (at most 100) */
        get: operations["listWebhookDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        /** The tries of the last three days, newest first (at most 100) */
        head: operations["listWebhookDeliveriesHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/webhooks/{id}/deliveries/{delivery}/redeliver": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Send the event of a try again, now, with the same webhook-id (at most 10 sends by hand a minute) */
        post: operations["redeliverWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/{site}/saved_replies": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The site's saved replies, by title */
        get: operations["listSavedReplies"];
        put?: never;
        /** A new saved reply (administrators) */
        post: operations["addSavedReply"];
        delete?: never;
        options?: never;
        /** The site's saved replies, by title */
        head: operations["listSavedRepliesHead"];
        patch?: never;
        trace?: never;
    };
    "/{site}/saved_replies/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A saved reply */
        get: operations["getSavedReply"];
        put?: never;
        post?: never;
        /** Remove a saved reply (administrators) */
        delete: operations["removeSavedReply"];
        options?: never;
        /** A saved reply */
        head: operations["getSavedReplyHead"];
        /** Change its title or text (administrators) */
        patch: operations["changeSavedReply"];
        trace?: never;
    };
}
export interface webhooks {
    "discussion.created": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A discussion was created (by the API, on the pages, by mail): the discussion with its opening post.
         * @description Verify the signature before trusting the body: the typed client exports verifyWebhook, and any Standard Webhooks library does it. A 2xx answer within 10 s delivers it; anything else is tried again (5xx, 408, 429, timeouts, refused connections) for about a day, or ends it (other 4xx, redirects).
         */
        post: operations["discussionCreatedEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "discussion.updated": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A discussion changed: its state (resolved, reopened), category, visibility or title.
         * @description Verify the signature before trusting the body: the typed client exports verifyWebhook, and any Standard Webhooks library does it. A 2xx answer within 10 s delivers it; anything else is tried again (5xx, 408, 429, timeouts, refused connections) for about a day, or ends it (other 4xx, redirects).
         */
        post: operations["discussionUpdatedEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "discussion.deleted": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A discussion was deleted (it can be restored).
         * @description Verify the signature before trusting the body: the typed client exports verifyWebhook, and any Standard Webhooks library does it. A 2xx answer within 10 s delivers it; anything else is tried again (5xx, 408, 429, timeouts, refused connections) for about a day, or ends it (other 4xx, redirects).
         */
        post: operations["discussionDeletedEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "discussion.restored": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A deleted discussion was restored.
         * @description Verify the signature before trusting the body: the typed client exports verifyWebhook, and any Standard Webhooks library does it. A 2xx answer within 10 s delivers it; anything else is tried again (5xx, 408, 429, timeouts, refused connections) for about a day, or ends it (other 4xx, redirects).
         */
        post: operations["discussionRestoredEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "comment.created": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A comment was added: public ones; internal notes only to endpoints that ask for them (internal_comments).
         * @description Verify the signature before trusting the body: the typed client exports verifyWebhook, and any Standard Webhooks library does it. A 2xx answer within 10 s delivers it; anything else is tried again (5xx, 408, 429, timeouts, refused connections) for about a day, or ends it (other 4xx, redirects).
         */
        post: operations["commentCreatedEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "token.created": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A personal token was made on the site.
         * @description Verify the signature before trusting the body: the typed client exports verifyWebhook, and any Standard Webhooks library does it. A 2xx answer within 10 s delivers it; anything else is tried again (5xx, 408, 429, timeouts, refused connections) for about a day, or ends it (other 4xx, redirects).
         */
        post: operations["tokenCreatedEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "token.revoked": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A personal token of the site was revoked, by its owner, an administrator or a leak report.
         * @description Verify the signature before trusting the body: the typed client exports verifyWebhook, and any Standard Webhooks library does it. A 2xx answer within 10 s delivers it; anything else is tried again (5xx, 408, 429, timeouts, refused connections) for about a day, or ends it (other 4xx, redirects).
         */
        post: operations["tokenRevokedEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "token.leaked": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A personal token of the site was reported found in public, and revoked (token.revoked is sent too).
         * @description Verify the signature before trusting the body: the typed client exports verifyWebhook, and any Standard Webhooks library does it. A 2xx answer within 10 s delivers it; anything else is tried again (5xx, 408, 429, timeouts, refused connections) for about a day, or ends it (other 4xx, redirects).
         */
        post: operations["tokenLeakedEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "application.authorized": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A person authorized an OAuth application on the site.
         * @description Verify the signature before trusting the body: the typed client exports verifyWebhook, and any Standard Webhooks library does it. A 2xx answer within 10 s delivers it; anything else is tried again (5xx, 408, 429, timeouts, refused connections) for about a day, or ends it (other 4xx, redirects).
         */
        post: operations["applicationAuthorizedEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "webhook.test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Sent when an administrator asks for a test: the endpoint itself.
         * @description Verify the signature before trusting the body: the typed client exports verifyWebhook, and any Standard Webhooks library does it. A 2xx answer within 10 s delivers it; anything else is tried again (5xx, 408, 429, timeouts, refused connections) for about a day, or ends it (other 4xx, redirects).
         */
        post: operations["webhookTestEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export interface components {
    schemas: {
        Site: {
            name: string;
            permalink: string;
            href: string;
            html_href: string;
            /** @description Every discussion but the deleted ones; /<number> shows one. */
            discussions_href: string;
            new_discussions_href: string;
            open_discussions_href: string;
            resolved_discussions_href: string;
            deleted_discussions_href: string;
            /** @description The categories; a discussion is created in one. */
            categories_href: string;
            api_tokens_url: string;
            /** @description The OpenAPI 3.1 document of this API. */
            api_documentation_href: string;
        };
        PersonalToken: {
            id: number;
            name: string;
            /**
             * @description read: Read only; write: Read and write.
             * @enum {unknown}
             */
            access: "read" | "write";
            /** @description Always true: an inactive token cannot ask. */
            active: boolean;
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            last_used_at: string;
            /** Format: date-time */
            expires_at: string;
            /** @description The last 5 addresses the token was used from, most recent first; this request's among them. */
            last_used_from: {
                address: string;
                /** Format: date-time */
                last_used_at: string;
            }[];
            /** @description The page where its owner revokes it. */
            api_tokens_url: string;
        };
        Discussion: {
            /** Format: uri */
            href: string;
            /** @description The discussion's number on its site: the {number} of every discussion path. */
            number: number;
            title: string;
            permalink: string;
            /** @enum {unknown} */
            state: "new" | "open" | "resolved" | "deleted";
            public: boolean;
            /** Format: date-time */
            created_at: string;
            /**
             * Format: date-time
             * @description Last change of any kind.
             */
            updated_at: string;
            /**
             * Format: date-time
             * @description Last activity: the newest comment.
             */
            last_updated_at: string;
            author_email: string;
            author_name: string;
            /**
             * Format: uri
             * @description The author's discussions.
             */
            user_href: string;
            /** @description Comments including the opening post. */
            comments_count: number;
            /** Format: uri */
            category_href: string;
            /**
             * Format: uri
             * @description GET lists the comments; POST adds a reply.
             */
            comments_href: string;
            /** Format: uri */
            html_href: string;
            /** Format: uri */
            resolve_href: string;
            /** Format: uri */
            unresolve_href: string;
            /** Format: uri */
            toggle_href: string;
            /** Format: uri */
            restore_href: string;
            /**
             * Format: uri
             * @description POST with ?to=<category id>.
             */
            change_category_href: string;
            /** @description The supporter of the site who owns it; null when nobody does. */
            assignee: {
                /** @description The user id: what ?assignee= and assign?to= take. */
                id: number;
                name: string;
            } | null;
            /**
             * Format: uri
             * @description POST with ?to=<user id>, me or none.
             */
            assign_href: string;
            /** @description Its tags: lower case, sorted. */
            tags: string[];
        };
        DiscussionWithComments: {
            /** Format: uri */
            href: string;
            /** @description The discussion's number on its site: the {number} of every discussion path. */
            number: number;
            title: string;
            permalink: string;
            /** @enum {unknown} */
            state: "new" | "open" | "resolved" | "deleted";
            public: boolean;
            /** Format: date-time */
            created_at: string;
            /**
             * Format: date-time
             * @description Last change of any kind.
             */
            updated_at: string;
            /**
             * Format: date-time
             * @description Last activity: the newest comment.
             */
            last_updated_at: string;
            author_email: string;
            author_name: string;
            /**
             * Format: uri
             * @description The author's discussions.
             */
            user_href: string;
            /** @description Comments including the opening post. */
            comments_count: number;
            /** Format: uri */
            category_href: string;
            /**
             * Format: uri
             * @description GET lists the comments; POST adds a reply.
             */
            comments_href: string;
            /** Format: uri */
            html_href: string;
            /** Format: uri */
            resolve_href: string;
            /** Format: uri */
            unresolve_href: string;
            /** Format: uri */
            toggle_href: string;
            /** Format: uri */
            restore_href: string;
            /**
             * Format: uri
             * @description POST with ?to=<category id>.
             */
            change_category_href: string;
            /** @description The supporter of the site who owns it; null when nobody does. */
            assignee: {
                /** @description The user id: what ?assignee= and assign?to= take. */
                id: number;
                name: string;
            } | null;
            /**
             * Format: uri
             * @description POST with ?to=<user id>, me or none.
             */
            assign_href: string;
            /** @description Its tags: lower case, sorted. */
            tags: string[];
            comments: components["schemas"]["Comment"][];
        };
        DiscussionListing: {
            /** @description How many come before this page; absent on a page walked by cursor. */
            offset?: number;
            total: number;
            per_page: number;
            /** @description On a page walked by cursor: the cursor of the next page (as in the Link header), null on the last page. */
            next_cursor?: string | null;
            discussions: components["schemas"]["Discussion"][];
        };
        SearchListing: {
            offset: number;
            total: number;
            per_page: number;
            /** @description More than 1,000 discussions match: the newest 1,000 are ranked and paged; narrow the query to reach older ones. */
            capped: boolean;
            /** @description Best match first. */
            results: components["schemas"]["SearchResult"][];
        };
        SearchResult: {
            discussion: components["schemas"]["Discussion"];
            /** @description Null when the query had filters only. */
            snippet: components["schemas"]["SearchSnippet"] | null;
        };
        /** @description Where the discussion matches. */
        SearchSnippet: {
            /** @description The number of the comment it is taken from; null for the title. */
            comment: number | null;
            /** @description About two dozen words around the first match, as written; … where the text goes on. */
            text: string;
            /** @description Where the words searched for are in text: [start, end) pairs, counted in UTF-16 code units (as JavaScript strings are). */
            matches: number[][];
        };
        Comment: {
            /** Format: uri */
            href: string;
            /** @description Position in the discussion; 1 is the opening post. */
            number: number;
            body: string;
            author_email: string;
            author_name: string;
            user_is_supporter: boolean;
            /** @description A note among the staff, not a reply the customer sees. */
            internal: boolean;
            /** Format: date-time */
            created_at: string;
            /** @enum {unknown} */
            via: "api" | "web" | "email" | "mcp";
            /** Format: uri */
            discussion_href: string;
            /** @description The files it carries; an internal note's are the staff's only. */
            attachments: components["schemas"]["Attachment"][];
            /** @description For a message that came by mail: true when its sender passed DMARC, false when it failed or when it names the address of a member of the team, which a mail cannot prove (the address may be spoofed: "sender not verified"), null when nothing could say, or not by mail. */
            sender_verified: boolean | null;
            /** @description For a message that came by mail: the address of the site it was sent to (null once that mailbox is removed, or not by mail). */
            mailbox: string | null;
            /** @description For a public reply of the staff to a discussion that came by mail or that a customer started on the customer's pages: how its mail to the customer is doing. Null otherwise. */
            delivery: {
                /**
                 * @description queued (waiting, or to be tried again), sent, or failed for good.
                 * @enum {unknown}
                 */
                state: "queued" | "sent" | "failed";
                /** @description The address it is mailed to. */
                to: string;
                /** @description The discussion's participants it copies (GET .../participants). */
                cc: string[];
                /** @description Tries so far. */
                attempts: number;
                /** @description The mail server's words on the last failed try. */
                last_error: string | null;
                sent_at: string | null;
            } | null;
        };
        CommentListing: {
            /** @description How many come before this page; absent on a page walked by cursor. */
            offset?: number;
            total: number;
            per_page: number;
            /** @description On a page walked by cursor: the cursor of the next page (as in the Link header), null on the last page. */
            next_cursor?: string | null;
            comments: components["schemas"]["Comment"][];
        };
        /** @description Each change shows its discussion as it is now, not as it was then: a mirror that writes each in place of its copy is up to date once it reaches the end of the stream. */
        ChangeFeed: {
            /** @description In the order they were committed, oldest first. */
            changes: components["schemas"]["Change"][];
            /** @description Where to go on from (after=): the last change of this page, or the after= sent when there was none. */
            next_cursor: string;
            /** @description Nothing more had been committed when this page was read: ask again later, or with wait=. */
            end_of_stream: boolean;
        };
        Change: {
            /** @description The feed read with after= this cursor goes on after this change. */
            cursor: string;
            /**
             * @description What happened; the same names as the webhook events.
             * @enum {unknown}
             */
            type: "discussion.created" | "discussion.updated" | "discussion.deleted" | "discussion.restored" | "comment.created";
            /** Format: date-time */
            at: string;
            discussion: components["schemas"]["Discussion"];
            /** @description The comment written (comment.created, and the opening post of discussion.created); null otherwise. */
            comment: components["schemas"]["Comment"] | null;
        };
        Category: {
            /** @description What change_category?to= and category (PUT) take. */
            id: number;
            /** Format: uri */
            href: string;
            name: string;
            permalink: string;
            /** @description New discussions here are public unless created with public: false. */
            public: boolean;
            /** Format: date-time */
            created_at: string;
            /**
             * Format: uri
             * @description GET lists them; POST creates one.
             */
            discussions_href: string;
            /** @description Whether the discussions customers start here are given to the site's supporters in turn. */
            round_robin: boolean;
            /** @description Discussions in every state but deleted. */
            discussions_count: number;
            new_discussions_count: number;
            open_discussions_count: number;
            resolved_discussions_count: number;
            deleted_discussions_count: number;
        };
        CategoryListing: {
            offset: number;
            total: number;
            per_page: number;
            categories: components["schemas"]["Category"][];
        };
        NewDiscussion: {
            /** @description The subject. */
            title: string;
            /** @description The opening post. */
            body: string;
            /** @description Defaults to the category's visibility. */
            public?: boolean;
            /** @description Post on behalf of this user; an unknown address becomes a customer of the site. Without it the post is yours. */
            author_email?: string;
            /** @description The name of a user created from author_email. */
            author_name?: string;
            /** @description Uploads of yours (POST /<site>/uploads) that the post carries, at most 10 and 25 MB together. With multipart/form-data, file parts are uploaded and carried as well. */
            uploads?: number[];
        };
        NewComment: {
            /** @description The comment. */
            body: string;
            /** @description A note among the staff. Default false. */
            internal?: boolean;
            /** @description Post on behalf of this user; an unknown address becomes a customer of the site. Without it the post is yours. */
            author_email?: string;
            /** @description The name of a user created from author_email. */
            author_name?: string;
            /** @description Uploads of yours (POST /<site>/uploads) that the post carries, at most 10 and 25 MB together. With multipart/form-data, file parts are uploaded and carried as well. */
            uploads?: number[];
        };
        DiscussionChange: {
            /** @description The subject. */
            title?: string;
            public?: boolean;
            /** @description Move to the category with this id. */
            category?: number;
            /** @description The supporter who owns it, or null for nobody. */
            assignee?: number | null;
            /** @description All its tags (at most 20, each at most 40 characters): kept in lower case, spaces as -; letters, digits and - . / : only. */
            tags?: string[];
        };
        Credential: {
            /** @description pat-<id>, oauth-<grant> or legacy-<user id>: what a revocation names. */
            id: string;
            /** @enum {unknown} */
            kind: "personal_token" | "oauth" | "legacy_token";
            /** @description The owner's email. */
            owner: string;
            owner_name: string;
            /** @description The token's name, the application's, or Legacy token. */
            name: string;
            /** @enum {unknown} */
            access: "read" | "write";
            /** Format: date-time */
            created_at: string;
            last_used_at: string | null;
            last_used_from: string | null;
            expires_at: string | null;
            /** @enum {unknown} */
            state: "active" | "unusable" | "expired" | "revoked";
            /** @description False for a legacy token, which belongs to the account on every site. */
            revocable: boolean;
        };
        CredentialList: {
            credentials: components["schemas"]["Credential"][];
            total: number;
            page: number;
            pages: number;
        };
        Revocation: {
            ids: string[];
            /** @description Told to each owner by mail, and kept in their security log. */
            reason: string;
        };
        RevokedCredentials: {
            revoked: components["schemas"]["Credential"][];
        };
        Policy: {
            /** @description The longest lifetime of a new personal token. */
            max_token_days: number;
            /**
             * @description Who may create Read and write personal tokens.
             * @enum {unknown}
             */
            write_tokens: "everyone" | "administrators";
            /** @description Whether the API accepts the legacy account token. */
            legacy_token: boolean;
            /** @description Whether the API accepts multipass. */
            multipass: boolean;
            /** @description Whether the API accepts email and password (Basic). */
            password: boolean;
            /** @description Whether the support staff must have a second factor: until they add one, their sign-in on the pages leads only to adding one. */
            staff_second_factor: boolean;
            /** @description Whether a visitor who is not signed in may start a discussion on the customer's pages; it is posted once the link mailed to them is followed. */
            visitor_discussions: boolean;
            /** @description Whether the customer's pages show the site's public discussions beside a customer's own. */
            public_discussions: boolean;
            /** @description Whether a supporter who has not chosen on their profile is mailed about every new discussion (on for a new site). */
            new_discussions_to_team: boolean;
        };
        PolicyChange: {
            /** @description The longest lifetime of a new personal token. */
            max_token_days?: number;
            /**
             * @description Who may create Read and write personal tokens.
             * @enum {unknown}
             */
            write_tokens?: "everyone" | "administrators";
            /** @description Whether the API accepts the legacy account token. */
            legacy_token?: boolean;
            /** @description Whether the API accepts multipass. */
            multipass?: boolean;
            /** @description Whether the API accepts email and password (Basic). */
            password?: boolean;
            /** @description Whether the support staff must have a second factor: until they add one, their sign-in on the pages leads only to adding one. */
            staff_second_factor?: boolean;
            /** @description Whether a visitor who is not signed in may start a discussion on the customer's pages; it is posted once the link mailed to them is followed. */
            visitor_discussions?: boolean;
            /** @description Whether the customer's pages show the site's public discussions beside a customer's own. */
            public_discussions?: boolean;
            /** @description Whether a supporter who has not chosen on their profile is mailed about every new discussion (on for a new site). */
            new_discussions_to_team?: boolean;
            /**
             * @description Required when a shorter max_token_days leaves active tokens over it: shorten them to end within it (owners mailed), or leave them.
             * @enum {unknown}
             */
            existing_tokens?: "shorten" | "leave";
        };
        PolicyChanged: {
            policy: components["schemas"]["Policy"];
            /** @description Tokens shortened to the new longest lifetime. */
            shortened: number;
            /** @description Tokens left lasting longer than it (existing_tokens: leave). */
            left_over: number;
        };
        PolicyDryRun: {
            error: string;
            message: string;
            dry_run: {
                max_token_days: number;
                tokens: number;
                people: number;
            };
        };
        Attachment: {
            /** @description The attachment id; for an upload, what `uploads` of a comment names. */
            id: number;
            /**
             * Format: uri
             * @description GET downloads the file.
             */
            href: string;
            /** @description The name it was sent with, cleaned: no path, no control characters. */
            name: string;
            /** @description In bytes. */
            size: number;
            /** @description Detected from its bytes, never taken from its name or from the type it was sent with. */
            content_type: string;
        };
        Upload: {
            /** @description The attachment id; for an upload, what `uploads` of a comment names. */
            id: number;
            /**
             * Format: uri
             * @description GET downloads the file.
             */
            href: string;
            /** @description The name it was sent with, cleaned: no path, no control characters. */
            name: string;
            /** @description In bytes. */
            size: number;
            /** @description Detected from its bytes, never taken from its name or from the type it was sent with. */
            content_type: string;
            /**
             * Format: date-time
             * @description Removed then unless a comment carries it.
             */
            expires_at: string;
        };
        UploadListing: {
            uploads: components["schemas"]["Upload"][];
        };
        UploadForm: {
            /** @description One part per file, each with its filename: at most 10 a request, and 10 MB each by default. */
            file: string[];
        };
        FilesOfAPost: {
            /** @description One part per file, each with its filename: at most 10 a request, and 10 MB each by default. */
            file?: string[];
        };
        Mailbox: {
            /** @description Mail to it opens discussions of the site; answers to them join theirs. */
            address: string;
            /** @description The category its mail opens discussions in; null: the site's first. */
            category_id: number | null;
            /** @description The IMAP mailbox its mail is fetched from, without its password; null: the built-in receiver takes its mail. */
            imap: string | null;
            /** @description The SMTP address its replies leave by, without its password; null: the service's (SERVICE_SMTP_URL). */
            smtp: string | null;
            /** @description Whether a new discussion by mail is answered at once by an automatic acknowledgement. */
            acknowledge: boolean;
            /** @description How its mail is arriving. */
            state: {
                /** @description When its IMAP mailbox was last read through; null: never (or no IMAP). */
                last_fetch_at: string | null;
                /** @description What went wrong at the last fetch, in words; null: nothing. */
                last_error: string | null;
                /** @description The last message passed over and left unread in the IMAP mailbox (it cannot be read, names no sender, or is too large): when, its UID and why; null: none. */
                passed_over: string | null;
                /** @description Messages taken in since midnight (UTC). */
                taken_today: number;
                /** @description Until when the process fetching its IMAP mailbox holds it (renewed at each look); a process that stopped without letting go holds it until then, unless it was on the machine of the next one to look. A time past: its holder stopped, and the next look takes it. Null: no process holds it. */
                fetched_until: string | null;
            };
            /** Format: date-time */
            created_at: string;
            /**
             * Format: uri
             * @description DELETE stops taking mail at the address.
             */
            href: string;
        };
        MailboxListing: {
            mailboxes: components["schemas"]["Mailbox"][];
        };
        NewMailbox: {
            /** @description The address, as mail is sent to it. */
            address: string;
            /** @description A category of the site; the site's first by default. */
            category_id?: number;
            /** @description An IMAP mailbox to fetch its mail from, `imaps://user:password@imap.example.com/INBOX` (user and password percent-encoded); without it, mail reaches the built-in receiver (SERVICE_MAIL_RECEIVER). The password is sealed and never shown again. */
            imap?: string;
            /** @description An SMTP address its replies leave by, `smtp://user:password@smtp.example.com:587`; without it, the service's. */
            smtp?: string;
            /** @description Answer each new discussion by mail with an automatic acknowledgement (off by default). */
            acknowledge?: boolean;
        };
        Webhook: {
            id: number;
            /**
             * Format: uri
             * @description Where the events are posted.
             */
            url: string;
            description: string;
            /** @description The events posted to it. */
            events: ("discussion.created" | "discussion.updated" | "discussion.deleted" | "discussion.restored" | "comment.created" | "token.created" | "token.revoked" | "token.leaked" | "application.authorized")[];
            /** @description Whether comment.created tells it of internal notes too. */
            internal_comments: boolean;
            /** @description False: nothing is posted to it (switched off by an administrator, or after failing for days). */
            enabled: boolean;
            /** @description Why it was switched off, when the service did it. */
            disabled_reason: string | null;
            /** @description Since when every delivery to it has failed; null when the last one succeeded. */
            failing_since: string | null;
            /** @description After a rotation, until when the secret it replaced still signs beside the new one. */
            previous_secret_until: string | null;
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            updated_at: string;
            /**
             * Format: uri
             * @description PATCH changes it, DELETE removes it.
             */
            href: string;
            /**
             * Format: uri
             * @description The log of its tries, three days.
             */
            deliveries_href: string;
        };
        WebhookWithSecret: components["schemas"]["Webhook"] & {
            /** @description The signing secret (whsec_...), shown this once: keep it where the receiver checks signatures. */
            secret: string;
        };
        NewWebhook: {
            /** @description An https (or http) address of a public host; private ranges only where the operator allows them (SERVICE_WEBHOOK_ALLOW). */
            url: string;
            /** @description The events to post to it. */
            events: ("discussion.created" | "discussion.updated" | "discussion.deleted" | "discussion.restored" | "comment.created" | "token.created" | "token.revoked" | "token.leaked" | "application.authorized")[];
            description?: string;
            /** @description Tell comment.created of internal notes too (off by default). */
            internal_comments?: boolean;
            enabled?: boolean;
        };
        WebhookChange: {
            /** @description An https (or http) address of a public host; private ranges only where the operator allows them (SERVICE_WEBHOOK_ALLOW). */
            url?: string;
            /** @description The events to post to it. */
            events?: ("discussion.created" | "discussion.updated" | "discussion.deleted" | "discussion.restored" | "comment.created" | "token.created" | "token.revoked" | "token.leaked" | "application.authorized")[];
            description?: string;
            /** @description Tell comment.created of internal notes too (off by default). */
            internal_comments?: boolean;
            /** @description true switches it back on, forgetting why it was switched off. */
            enabled?: boolean;
        };
        WebhookListing: {
            webhooks: components["schemas"]["Webhook"][];
        };
        WebhookDelivery: {
            id: number;
            /** @description The webhook-id header of the try: the same on every try of one event. */
            event_id: string;
            /** @description One of the events, or webhook.test. */
            event_type: string;
            /** Format: date-time */
            attempted_at: string;
            /** @description The HTTP status of the answer; null when none came (refused, timed out, unreachable). */
            status: number | null;
            duration_ms: number;
            /** @description The first 500 characters of the answer. */
            answer: string;
            /** @description Why the try failed; null when it delivered. */
            error: string | null;
            /**
             * Format: uri
             * @description POST sends the event again, with its id.
             */
            redeliver_href: string;
        };
        WebhookDeliveryListing: {
            deliveries: components["schemas"]["WebhookDelivery"][];
        };
        QueuedEvent: {
            /** @description The webhook-id of the event queued. */
            event_id: string;
        };
        Participant: {
            email: string;
            name: string | null;
            /**
             * @description mail: a customer's mail copied them (its Cc, or its To besides the mailbox); team: a supporter added them.
             * @enum {unknown}
             */
            added_by: "mail" | "team";
            /** Format: date-time */
            added_at: string;
        };
        ParticipantListing: {
            participants: components["schemas"]["Participant"][];
        };
        NewParticipant: {
            /** @description Their address. */
            email: string;
            /** @description Their name, for the mail. */
            name?: string;
        };
        SavedReply: {
            id: number;
            title: string;
            /** @description The text as written, placeholders ({{customer.name}}, {{customer.first_name}}, {{supporter.name}}, {{site.name}}, {{discussion.number}}) included. */
            body: string;
            /** @description With ?discussion=<number>: the text with its placeholders filled in for that discussion, ready to post. Null otherwise. */
            filled: string | null;
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            updated_at: string;
            /** Format: uri */
            href: string;
        };
        SavedReplyListing: {
            saved_replies: components["schemas"]["SavedReply"][];
        };
        NewSavedReply: {
            title: string;
            body: string;
        };
        SavedReplyChange: {
            title?: string;
            body?: string;
        };
        CategoryChange: {
            /** @description Give the discussions customers start here to the site's supporters in turn. */
            round_robin: boolean;
        };
        Error: {
            error: string;
            message: string;
        };
        ValidationError: {
            error: string;
            message: string;
            fields?: {
                field: string;
                problem: string;
            }[];
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: {
        /** @description When the personal token of the request expires (an RFC 9110 date); on every answer to a genuine personal token. */
        "Service-Token-Expiration": string;
        /** @description The challenge: Bearer realm, error (invalid_token, insufficient_scope), error_description, scope, resource_metadata. */
        "WWW-Authenticate": string;
        /** @description Seconds to wait before trying again. */
        "Retry-After": number;
        /** @description "true" on answers to a multipass request: multipass is deprecated for the API. */
        Deprecation: string;
        /** @description Pages of a listing (rel="first", "prev", "next", "last"; a walk by cursor: "first" and "next"), the change feed's next page (rel="next"), and for multipass rel="deprecation" to the migration guide. */
        Link: string;
        /** @description "true" on the answer to a repeat of a POST with an Idempotency-Key: the first request's answer, sent again; nothing was done again. */
        "Idempotent-Replayed": string;
        /** @description The entity tag of this representation (strong): send it back as If-None-Match to get 304 while nothing changed, or as If-Match on a change to a discussion. */
        ETag: string;
        /** @description The policies the request is counted under (draft-ietf-httpapi-ratelimit-headers): `"reads";q=10000;w=3600` (q requests per w seconds); reads, writes, anonymous (per client address), and failures (failed authentications per address) before it on a refused credential. */
        "RateLimit-Policy": string;
        /** @description What is left of each policy: `"reads";r=9999;t=1800` (r requests left, t seconds until the window ends). A 304 is not counted. */
        RateLimit: string;
        /** @description Requests per window of the policy this request counted against (GitHub's name). */
        "X-RateLimit-Limit": number;
        /** @description Requests left in the window. */
        "X-RateLimit-Remaining": number;
        /** @description Requests made in the window. */
        "X-RateLimit-Used": number;
        /** @description When the window ends, in seconds since the epoch. */
        "X-RateLimit-Reset": number;
        /** @description The policy: reads, writes, anonymous or failures. */
        "X-RateLimit-Resource": string;
    };
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    getSite: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Site"];
                    "application/json": components["schemas"]["Site"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Refused before the route: the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    getSiteHead: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Site"];
                    "application/json": components["schemas"]["Site"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Refused before the route: the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    getCurrentPersonalToken: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["PersonalToken"];
                    "application/json": components["schemas"]["PersonalToken"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Refused before the route: the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    getCurrentPersonalTokenHead: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["PersonalToken"];
                    "application/json": components["schemas"]["PersonalToken"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Refused before the route: the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listDiscussions: {
        parameters: {
            query?: {
                /** @description 1-based page of 30. */
                page?: number;
                /** @description Walk by cursor: empty to start, then the cursor the Link header (rel="next") or next_cursor gave. Not with page. */
                cursor?: string;
                /** @description Newest first by: last activity (the default), creation or last change. */
                sort?: "activity" | "created" | "updated";
                /** @description 1: public discussions only; 0: private only. */
                public?: "1" | "0" | "true" | "false";
                /** @description A number: discussions numbered above it. A date (YYYY-MM-DD, UTC): sorted by the listing order, at or after it. */
                since?: string;
                /** @description Only this user's discussions. */
                user_id?: number;
                /** @description Only the discussions of the user with this address. */
                user_email?: string;
                /** @description Only the discussions this supporter owns: a user id, me, or none for those nobody owns. */
                assignee?: string;
                /** @description Only the discussions carrying this tag. */
                tag?: string;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["DiscussionListing"];
                    "application/json": components["schemas"]["DiscussionListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listDiscussionsHead: {
        parameters: {
            query?: {
                /** @description 1-based page of 30. */
                page?: number;
                /** @description Walk by cursor: empty to start, then the cursor the Link header (rel="next") or next_cursor gave. Not with page. */
                cursor?: string;
                /** @description Newest first by: last activity (the default), creation or last change. */
                sort?: "activity" | "created" | "updated";
                /** @description 1: public discussions only; 0: private only. */
                public?: "1" | "0" | "true" | "false";
                /** @description A number: discussions numbered above it. A date (YYYY-MM-DD, UTC): sorted by the listing order, at or after it. */
                since?: string;
                /** @description Only this user's discussions. */
                user_id?: number;
                /** @description Only the discussions of the user with this address. */
                user_email?: string;
                /** @description Only the discussions this supporter owns: a user id, me, or none for those nobody owns. */
                assignee?: string;
                /** @description Only the discussions carrying this tag. */
                tag?: string;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["DiscussionListing"];
                    "application/json": components["schemas"]["DiscussionListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listNewDiscussions: {
        parameters: {
            query?: {
                /** @description 1-based page of 30. */
                page?: number;
                /** @description Walk by cursor: empty to start, then the cursor the Link header (rel="next") or next_cursor gave. Not with page. */
                cursor?: string;
                /** @description Newest first by: last activity (the default), creation or last change. */
                sort?: "activity" | "created" | "updated";
                /** @description 1: public discussions only; 0: private only. */
                public?: "1" | "0" | "true" | "false";
                /** @description A number: discussions numbered above it. A date (YYYY-MM-DD, UTC): sorted by the listing order, at or after it. */
                since?: string;
                /** @description Only this user's discussions. */
                user_id?: number;
                /** @description Only the discussions of the user with this address. */
                user_email?: string;
                /** @description Only the discussions this supporter owns: a user id, me, or none for those nobody owns. */
                assignee?: string;
                /** @description Only the discussions carrying this tag. */
                tag?: string;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["DiscussionListing"];
                    "application/json": components["schemas"]["DiscussionListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listNewDiscussionsHead: {
        parameters: {
            query?: {
                /** @description 1-based page of 30. */
                page?: number;
                /** @description Walk by cursor: empty to start, then the cursor the Link header (rel="next") or next_cursor gave. Not with page. */
                cursor?: string;
                /** @description Newest first by: last activity (the default), creation or last change. */
                sort?: "activity" | "created" | "updated";
                /** @description 1: public discussions only; 0: private only. */
                public?: "1" | "0" | "true" | "false";
                /** @description A number: discussions numbered above it. A date (YYYY-MM-DD, UTC): sorted by the listing order, at or after it. */
                since?: string;
                /** @description Only this user's discussions. */
                user_id?: number;
                /** @description Only the discussions of the user with this address. */
                user_email?: string;
                /** @description Only the discussions this supporter owns: a user id, me, or none for those nobody owns. */
                assignee?: string;
                /** @description Only the discussions carrying this tag. */
                tag?: string;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["DiscussionListing"];
                    "application/json": components["schemas"]["DiscussionListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listOpenDiscussions: {
        parameters: {
            query?: {
                /** @description 1-based page of 30. */
                page?: number;
                /** @description Walk by cursor: empty to start, then the cursor the Link header (rel="next") or next_cursor gave. Not with page. */
                cursor?: string;
                /** @description Newest first by: last activity (the default), creation or last change. */
                sort?: "activity" | "created" | "updated";
                /** @description 1: public discussions only; 0: private only. */
                public?: "1" | "0" | "true" | "false";
                /** @description A number: discussions numbered above it. A date (YYYY-MM-DD, UTC): sorted by the listing order, at or after it. */
                since?: string;
                /** @description Only this user's discussions. */
                user_id?: number;
                /** @description Only the discussions of the user with this address. */
                user_email?: string;
                /** @description Only the discussions this supporter owns: a user id, me, or none for those nobody owns. */
                assignee?: string;
                /** @description Only the discussions carrying this tag. */
                tag?: string;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["DiscussionListing"];
                    "application/json": components["schemas"]["DiscussionListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listOpenDiscussionsHead: {
        parameters: {
            query?: {
                /** @description 1-based page of 30. */
                page?: number;
                /** @description Walk by cursor: empty to start, then the cursor the Link header (rel="next") or next_cursor gave. Not with page. */
                cursor?: string;
                /** @description Newest first by: last activity (the default), creation or last change. */
                sort?: "activity" | "created" | "updated";
                /** @description 1: public discussions only; 0: private only. */
                public?: "1" | "0" | "true" | "false";
                /** @description A number: discussions numbered above it. A date (YYYY-MM-DD, UTC): sorted by the listing order, at or after it. */
                since?: string;
                /** @description Only this user's discussions. */
                user_id?: number;
                /** @description Only the discussions of the user with this address. */
                user_email?: string;
                /** @description Only the discussions this supporter owns: a user id, me, or none for those nobody owns. */
                assignee?: string;
                /** @description Only the discussions carrying this tag. */
                tag?: string;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["DiscussionListing"];
                    "application/json": components["schemas"]["DiscussionListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listResolvedDiscussions: {
        parameters: {
            query?: {
                /** @description 1-based page of 30. */
                page?: number;
                /** @description Walk by cursor: empty to start, then the cursor the Link header (rel="next") or next_cursor gave. Not with page. */
                cursor?: string;
                /** @description Newest first by: last activity (the default), creation or last change. */
                sort?: "activity" | "created" | "updated";
                /** @description 1: public discussions only; 0: private only. */
                public?: "1" | "0" | "true" | "false";
                /** @description A number: discussions numbered above it. A date (YYYY-MM-DD, UTC): sorted by the listing order, at or after it. */
                since?: string;
                /** @description Only this user's discussions. */
                user_id?: number;
                /** @description Only the discussions of the user with this address. */
                user_email?: string;
                /** @description Only the discussions this supporter owns: a user id, me, or none for those nobody owns. */
                assignee?: string;
                /** @description Only the discussions carrying this tag. */
                tag?: string;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["DiscussionListing"];
                    "application/json": components["schemas"]["DiscussionListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listResolvedDiscussionsHead: {
        parameters: {
            query?: {
                /** @description 1-based page of 30. */
                page?: number;
                /** @description Walk by cursor: empty to start, then the cursor the Link header (rel="next") or next_cursor gave. Not with page. */
                cursor?: string;
                /** @description Newest first by: last activity (the default), creation or last change. */
                sort?: "activity" | "created" | "updated";
                /** @description 1: public discussions only; 0: private only. */
                public?: "1" | "0" | "true" | "false";
                /** @description A number: discussions numbered above it. A date (YYYY-MM-DD, UTC): sorted by the listing order, at or after it. */
                since?: string;
                /** @description Only this user's discussions. */
                user_id?: number;
                /** @description Only the discussions of the user with this address. */
                user_email?: string;
                /** @description Only the discussions this supporter owns: a user id, me, or none for those nobody owns. */
                assignee?: string;
                /** @description Only the discussions carrying this tag. */
                tag?: string;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["DiscussionListing"];
                    "application/json": components["schemas"]["DiscussionListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listDeletedDiscussions: {
        parameters: {
            query?: {
                /** @description 1-based page of 30. */
                page?: number;
                /** @description Walk by cursor: empty to start, then the cursor the Link header (rel="next") or next_cursor gave. Not with page. */
                cursor?: string;
                /** @description Newest first by: last activity (the default), creation or last change. */
                sort?: "activity" | "created" | "updated";
                /** @description 1: public discussions only; 0: private only. */
                public?: "1" | "0" | "true" | "false";
                /** @description A number: discussions numbered above it. A date (YYYY-MM-DD, UTC): sorted by the listing order, at or after it. */
                since?: string;
                /** @description Only this user's discussions. */
                user_id?: number;
                /** @description Only the discussions of the user with this address. */
                user_email?: string;
                /** @description Only the discussions this supporter owns: a user id, me, or none for those nobody owns. */
                assignee?: string;
                /** @description Only the discussions carrying this tag. */
                tag?: string;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["DiscussionListing"];
                    "application/json": components["schemas"]["DiscussionListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listDeletedDiscussionsHead: {
        parameters: {
            query?: {
                /** @description 1-based page of 30. */
                page?: number;
                /** @description Walk by cursor: empty to start, then the cursor the Link header (rel="next") or next_cursor gave. Not with page. */
                cursor?: string;
                /** @description Newest first by: last activity (the default), creation or last change. */
                sort?: "activity" | "created" | "updated";
                /** @description 1: public discussions only; 0: private only. */
                public?: "1" | "0" | "true" | "false";
                /** @description A number: discussions numbered above it. A date (YYYY-MM-DD, UTC): sorted by the listing order, at or after it. */
                since?: string;
                /** @description Only this user's discussions. */
                user_id?: number;
                /** @description Only the discussions of the user with this address. */
                user_email?: string;
                /** @description Only the discussions this supporter owns: a user id, me, or none for those nobody owns. */
                assignee?: string;
                /** @description Only the discussions carrying this tag. */
                tag?: string;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["DiscussionListing"];
                    "application/json": components["schemas"]["DiscussionListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    searchDiscussions: {
        parameters: {
            query: {
                /** @description Words (every one must be there; accents and case do not matter), "a phrase", -excluded words or phrases, and filters: state:new|open|resolved|deleted|todo (without one: every state but deleted), category:<name or id>, from:<email>, assignee:me|none|<email>, tag:<tag>, after:YYYY-MM-DD, before:YYYY-MM-DD. */
                q: string;
                /** @description 1-based page of 30. */
                page?: number;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["SearchListing"];
                    "application/json": components["schemas"]["SearchListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    searchDiscussionsHead: {
        parameters: {
            query: {
                /** @description Words (every one must be there; accents and case do not matter), "a phrase", -excluded words or phrases, and filters: state:new|open|resolved|deleted|todo (without one: every state but deleted), category:<name or id>, from:<email>, assignee:me|none|<email>, tag:<tag>, after:YYYY-MM-DD, before:YYYY-MM-DD. */
                q: string;
                /** @description 1-based page of 30. */
                page?: number;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["SearchListing"];
                    "application/json": components["schemas"]["SearchListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    getDiscussion: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["DiscussionWithComments"];
                    "application/json": components["schemas"]["DiscussionWithComments"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    updateDiscussion: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of the discussion as you read it (GET of the discussion, same Accept): the change goes ahead only while that is still the discussion's version, else 412. */
                "If-Match"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["DiscussionChange"];
                "application/vnd.service-v1+json": components["schemas"]["DiscussionChange"];
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Discussion"];
                    "application/json": components["schemas"]["Discussion"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Precondition Failed: the discussion changed since the version If-Match names; the ETag header names the current one. JSON {error: "precondition_failed", message}. */
            412: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            413: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            415: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    deleteDiscussion: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of the discussion as you read it (GET of the discussion, same Accept): the change goes ahead only while that is still the discussion's version, else 412. */
                "If-Match"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Discussion"];
                    "application/json": components["schemas"]["Discussion"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Precondition Failed: the discussion changed since the version If-Match names; the ETag header names the current one. JSON {error: "precondition_failed", message}. */
            412: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            413: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            415: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    getDiscussionHead: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["DiscussionWithComments"];
                    "application/json": components["schemas"]["DiscussionWithComments"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listComments: {
        parameters: {
            query?: {
                /** @description 1-based page of 30. */
                page?: number;
                /** @description Walk by cursor: empty to start, then the cursor the Link header (rel="next") or next_cursor gave. Not with page. */
                cursor?: string;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["CommentListing"];
                    "application/json": components["schemas"]["CommentListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    createComment: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of the discussion as you read it (GET of the discussion, same Accept): the change goes ahead only while that is still the discussion's version, else 412. */
                "If-Match"?: string;
                /** @description A key of your own for this request (draft-ietf-httpapi-idempotency-key-header; "quoted" or bare, 1 to 255 visible ASCII characters), unique per request: a repeat with the same key and the same request within 24 hours is answered with the first answer (Idempotent-Replayed: true) and does nothing again. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NewComment"];
                "application/vnd.service-v1+json": components["schemas"]["NewComment"];
                "multipart/form-data": components["schemas"]["NewComment"] & components["schemas"]["FilesOfAPost"];
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Comment"];
                    "application/json": components["schemas"]["Comment"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Precondition Failed: the discussion changed since the version If-Match names; the ETag header names the current one. JSON {error: "precondition_failed", message}. */
            412: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            413: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            415: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unprocessable: this Idempotency-Key was sent with another request (method, address or body) within 24 hours. JSON {error: "idempotency_key_reused", message}. */
            422: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listCommentsHead: {
        parameters: {
            query?: {
                /** @description 1-based page of 30. */
                page?: number;
                /** @description Walk by cursor: empty to start, then the cursor the Link header (rel="next") or next_cursor gave. Not with page. */
                cursor?: string;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["CommentListing"];
                    "application/json": components["schemas"]["CommentListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    getComment: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
                /** @description The comment number; 1 is the opening post. */
                comment: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Comment"];
                    "application/json": components["schemas"]["Comment"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    getCommentHead: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
                /** @description The comment number; 1 is the opening post. */
                comment: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Comment"];
                    "application/json": components["schemas"]["Comment"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listCategoryDiscussions: {
        parameters: {
            query?: {
                /** @description 1-based page of 30. */
                page?: number;
                /** @description Walk by cursor: empty to start, then the cursor the Link header (rel="next") or next_cursor gave. Not with page. */
                cursor?: string;
                /** @description Newest first by: last activity (the default), creation or last change. */
                sort?: "activity" | "created" | "updated";
                /** @description 1: public discussions only; 0: private only. */
                public?: "1" | "0" | "true" | "false";
                /** @description A number: discussions numbered above it. A date (YYYY-MM-DD, UTC): sorted by the listing order, at or after it. */
                since?: string;
                /** @description Only this user's discussions. */
                user_id?: number;
                /** @description Only the discussions of the user with this address. */
                user_email?: string;
                /** @description Only the discussions this supporter owns: a user id, me, or none for those nobody owns. */
                assignee?: string;
                /** @description Only the discussions carrying this tag. */
                tag?: string;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The category id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["DiscussionListing"];
                    "application/json": components["schemas"]["DiscussionListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    createDiscussion: {
        parameters: {
            query?: never;
            header?: {
                /** @description A key of your own for this request (draft-ietf-httpapi-idempotency-key-header; "quoted" or bare, 1 to 255 visible ASCII characters), unique per request: a repeat with the same key and the same request within 24 hours is answered with the first answer (Idempotent-Replayed: true) and does nothing again. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The category id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NewDiscussion"];
                "application/vnd.service-v1+json": components["schemas"]["NewDiscussion"];
                "multipart/form-data": components["schemas"]["NewDiscussion"] & components["schemas"]["FilesOfAPost"];
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["DiscussionWithComments"];
                    "application/json": components["schemas"]["DiscussionWithComments"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Conflict: the first request with this Idempotency-Key is still being answered (JSON {error: "idempotency_key_in_use", message}); repeat it after Retry-After. Other routes answer 409 for their own conflicts too. */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            413: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            415: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unprocessable: this Idempotency-Key was sent with another request (method, address or body) within 24 hours. JSON {error: "idempotency_key_reused", message}. */
            422: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listCategoryDiscussionsHead: {
        parameters: {
            query?: {
                /** @description 1-based page of 30. */
                page?: number;
                /** @description Walk by cursor: empty to start, then the cursor the Link header (rel="next") or next_cursor gave. Not with page. */
                cursor?: string;
                /** @description Newest first by: last activity (the default), creation or last change. */
                sort?: "activity" | "created" | "updated";
                /** @description 1: public discussions only; 0: private only. */
                public?: "1" | "0" | "true" | "false";
                /** @description A number: discussions numbered above it. A date (YYYY-MM-DD, UTC): sorted by the listing order, at or after it. */
                since?: string;
                /** @description Only this user's discussions. */
                user_id?: number;
                /** @description Only the discussions of the user with this address. */
                user_email?: string;
                /** @description Only the discussions this supporter owns: a user id, me, or none for those nobody owns. */
                assignee?: string;
                /** @description Only the discussions carrying this tag. */
                tag?: string;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The category id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["DiscussionListing"];
                    "application/json": components["schemas"]["DiscussionListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    resolveDiscussion: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of the discussion as you read it (GET of the discussion, same Accept): the change goes ahead only while that is still the discussion's version, else 412. */
                "If-Match"?: string;
                /** @description A key of your own for this request (draft-ietf-httpapi-idempotency-key-header; "quoted" or bare, 1 to 255 visible ASCII characters), unique per request: a repeat with the same key and the same request within 24 hours is answered with the first answer (Idempotent-Replayed: true) and does nothing again. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Discussion"];
                    "application/json": components["schemas"]["Discussion"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Precondition Failed: the discussion changed since the version If-Match names; the ETag header names the current one. JSON {error: "precondition_failed", message}. */
            412: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            413: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            415: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unprocessable: this Idempotency-Key was sent with another request (method, address or body) within 24 hours. JSON {error: "idempotency_key_reused", message}. */
            422: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    unresolveDiscussion: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of the discussion as you read it (GET of the discussion, same Accept): the change goes ahead only while that is still the discussion's version, else 412. */
                "If-Match"?: string;
                /** @description A key of your own for this request (draft-ietf-httpapi-idempotency-key-header; "quoted" or bare, 1 to 255 visible ASCII characters), unique per request: a repeat with the same key and the same request within 24 hours is answered with the first answer (Idempotent-Replayed: true) and does nothing again. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Discussion"];
                    "application/json": components["schemas"]["Discussion"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Precondition Failed: the discussion changed since the version If-Match names; the ETag header names the current one. JSON {error: "precondition_failed", message}. */
            412: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            413: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            415: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unprocessable: this Idempotency-Key was sent with another request (method, address or body) within 24 hours. JSON {error: "idempotency_key_reused", message}. */
            422: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    toggleDiscussion: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of the discussion as you read it (GET of the discussion, same Accept): the change goes ahead only while that is still the discussion's version, else 412. */
                "If-Match"?: string;
                /** @description A key of your own for this request (draft-ietf-httpapi-idempotency-key-header; "quoted" or bare, 1 to 255 visible ASCII characters), unique per request: a repeat with the same key and the same request within 24 hours is answered with the first answer (Idempotent-Replayed: true) and does nothing again. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Discussion"];
                    "application/json": components["schemas"]["Discussion"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Precondition Failed: the discussion changed since the version If-Match names; the ETag header names the current one. JSON {error: "precondition_failed", message}. */
            412: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            413: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            415: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unprocessable: this Idempotency-Key was sent with another request (method, address or body) within 24 hours. JSON {error: "idempotency_key_reused", message}. */
            422: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    restoreDiscussion: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of the discussion as you read it (GET of the discussion, same Accept): the change goes ahead only while that is still the discussion's version, else 412. */
                "If-Match"?: string;
                /** @description A key of your own for this request (draft-ietf-httpapi-idempotency-key-header; "quoted" or bare, 1 to 255 visible ASCII characters), unique per request: a repeat with the same key and the same request within 24 hours is answered with the first answer (Idempotent-Replayed: true) and does nothing again. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Discussion"];
                    "application/json": components["schemas"]["Discussion"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Precondition Failed: the discussion changed since the version If-Match names; the ETag header names the current one. JSON {error: "precondition_failed", message}. */
            412: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            413: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            415: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unprocessable: this Idempotency-Key was sent with another request (method, address or body) within 24 hours. JSON {error: "idempotency_key_reused", message}. */
            422: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    changeDiscussionCategory: {
        parameters: {
            query: {
                /** @description The id of the category to move to. */
                to: number;
            };
            header?: {
                /** @description The ETag of the discussion as you read it (GET of the discussion, same Accept): the change goes ahead only while that is still the discussion's version, else 412. */
                "If-Match"?: string;
                /** @description A key of your own for this request (draft-ietf-httpapi-idempotency-key-header; "quoted" or bare, 1 to 255 visible ASCII characters), unique per request: a repeat with the same key and the same request within 24 hours is answered with the first answer (Idempotent-Replayed: true) and does nothing again. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Discussion"];
                    "application/json": components["schemas"]["Discussion"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Precondition Failed: the discussion changed since the version If-Match names; the ETag header names the current one. JSON {error: "precondition_failed", message}. */
            412: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            413: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            415: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unprocessable: this Idempotency-Key was sent with another request (method, address or body) within 24 hours. JSON {error: "idempotency_key_reused", message}. */
            422: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    assignDiscussion: {
        parameters: {
            query: {
                /** @description Give it to this supporter of the site (a user id, or me), or to nobody (none). */
                to: string;
            };
            header?: {
                /** @description The ETag of the discussion as you read it (GET of the discussion, same Accept): the change goes ahead only while that is still the discussion's version, else 412. */
                "If-Match"?: string;
                /** @description A key of your own for this request (draft-ietf-httpapi-idempotency-key-header; "quoted" or bare, 1 to 255 visible ASCII characters), unique per request: a repeat with the same key and the same request within 24 hours is answered with the first answer (Idempotent-Replayed: true) and does nothing again. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Discussion"];
                    "application/json": components["schemas"]["Discussion"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Precondition Failed: the discussion changed since the version If-Match names; the ETag header names the current one. JSON {error: "precondition_failed", message}. */
            412: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            413: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            415: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unprocessable: this Idempotency-Key was sent with another request (method, address or body) within 24 hours. JSON {error: "idempotency_key_reused", message}. */
            422: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listCategories: {
        parameters: {
            query?: {
                /** @description 1-based page of 30. */
                page?: number;
                /** @description Walk by cursor: empty to start, then the cursor the Link header (rel="next") or next_cursor gave. Not with page. */
                cursor?: string;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["CategoryListing"];
                    "application/json": components["schemas"]["CategoryListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listCategoriesHead: {
        parameters: {
            query?: {
                /** @description 1-based page of 30. */
                page?: number;
                /** @description Walk by cursor: empty to start, then the cursor the Link header (rel="next") or next_cursor gave. Not with page. */
                cursor?: string;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["CategoryListing"];
                    "application/json": components["schemas"]["CategoryListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    getCategory: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The category id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Category"];
                    "application/json": components["schemas"]["Category"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    getCategoryHead: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The category id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Category"];
                    "application/json": components["schemas"]["Category"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    changeCategory: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The category id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CategoryChange"];
                "application/vnd.service-v1+json": components["schemas"]["CategoryChange"];
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Category"];
                    "application/json": components["schemas"]["Category"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listChanges: {
        parameters: {
            query?: {
                /** @description The cursor to go on after (next_cursor or a change's cursor); from the first change without one. */
                after?: string;
                /** @description Seconds to wait for a change when there is none yet (long polling); 0 by default. */
                wait?: number;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Each change shows its discussion as it is now, not as it was then: a mirror that writes each in place of its copy is up to date once it reaches the end of the stream. */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ChangeFeed"];
                    "application/json": components["schemas"]["ChangeFeed"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listChangesHead: {
        parameters: {
            query?: {
                /** @description The cursor to go on after (next_cursor or a change's cursor); from the first change without one. */
                after?: string;
                /** @description Seconds to wait for a change when there is none yet (long polling); 0 by default. */
                wait?: number;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Each change shows its discussion as it is now, not as it was then: a mirror that writes each in place of its copy is up to date once it reaches the end of the stream. */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ChangeFeed"];
                    "application/json": components["schemas"]["ChangeFeed"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listParticipants: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ParticipantListing"];
                    "application/json": components["schemas"]["ParticipantListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Refused before the route: the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    addParticipant: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of the discussion as you read it (GET of the discussion, same Accept): the change goes ahead only while that is still the discussion's version, else 412. */
                "If-Match"?: string;
                /** @description A key of your own for this request (draft-ietf-httpapi-idempotency-key-header; "quoted" or bare, 1 to 255 visible ASCII characters), unique per request: a repeat with the same key and the same request within 24 hours is answered with the first answer (Idempotent-Replayed: true) and does nothing again. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NewParticipant"];
                "application/vnd.service-v1+json": components["schemas"]["NewParticipant"];
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Participant"];
                    "application/json": components["schemas"]["Participant"];
                };
            };
            /** @description Default Response */
            201: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Participant"];
                    "application/json": components["schemas"]["Participant"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Conflict: the first request with this Idempotency-Key is still being answered (JSON {error: "idempotency_key_in_use", message}); repeat it after Retry-After. Other routes answer 409 for their own conflicts too. */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Precondition Failed: the discussion changed since the version If-Match names; the ETag header names the current one. JSON {error: "precondition_failed", message}. */
            412: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            413: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            415: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unprocessable: this Idempotency-Key was sent with another request (method, address or body) within 24 hours. JSON {error: "idempotency_key_reused", message}. */
            422: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listParticipantsHead: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ParticipantListing"];
                    "application/json": components["schemas"]["ParticipantListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Refused before the route: the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    removeParticipant: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of the discussion as you read it (GET of the discussion, same Accept): the change goes ahead only while that is still the discussion's version, else 412. */
                "If-Match"?: string;
            };
            path: {
                /** @description The site permalink. */
                site: string;
                /** @description The discussion number. */
                number: number;
                /** @description The participant's address. */
                email: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            204: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Refused before the route: the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Precondition Failed: the discussion changed since the version If-Match names; the ETag header names the current one. JSON {error: "precondition_failed", message}. */
            412: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    createUploads: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "multipart/form-data": components["schemas"]["UploadForm"];
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["UploadListing"];
                    "application/json": components["schemas"]["UploadListing"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            413: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            415: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    getAttachment: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
                /** @description The attachment id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/octet-stream": string;
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    getAttachmentHead: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
                /** @description The attachment id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/octet-stream": string;
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listCredentials: {
        parameters: {
            query?: {
                /** @description Part of the owner email, in any case. */
                owner?: string;
                kind?: "personal_token" | "oauth" | "legacy_token";
                access?: "read" | "write";
                /** @description Not used for at least this many days (never used counts). */
                unused_days?: number;
                /** @description Active and ending within this many days. */
                expires_within_days?: number;
                sort?: "owner" | "kind" | "name" | "access" | "created" | "last_used" | "expires" | "state";
                direction?: "asc" | "desc";
                page?: number;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["CredentialList"];
                    "application/json": components["schemas"]["CredentialList"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Refused before the route: the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listCredentialsHead: {
        parameters: {
            query?: {
                /** @description Part of the owner email, in any case. */
                owner?: string;
                kind?: "personal_token" | "oauth" | "legacy_token";
                access?: "read" | "write";
                /** @description Not used for at least this many days (never used counts). */
                unused_days?: number;
                /** @description Active and ending within this many days. */
                expires_within_days?: number;
                sort?: "owner" | "kind" | "name" | "access" | "created" | "last_used" | "expires" | "state";
                direction?: "asc" | "desc";
                page?: number;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["CredentialList"];
                    "application/json": components["schemas"]["CredentialList"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Refused before the route: the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    revokeCredentials: {
        parameters: {
            query?: never;
            header?: {
                /** @description A key of your own for this request (draft-ietf-httpapi-idempotency-key-header; "quoted" or bare, 1 to 255 visible ASCII characters), unique per request: a repeat with the same key and the same request within 24 hours is answered with the first answer (Idempotent-Replayed: true) and does nothing again. */
                "Idempotency-Key"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["Revocation"];
                "application/vnd.service-v1+json": components["schemas"]["Revocation"];
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["RevokedCredentials"];
                    "application/json": components["schemas"]["RevokedCredentials"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unprocessable: this Idempotency-Key was sent with another request (method, address or body) within 24 hours. JSON {error: "idempotency_key_reused", message}. */
            422: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    getPolicy: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Policy"];
                    "application/json": components["schemas"]["Policy"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Refused before the route: the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    getPolicyHead: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Policy"];
                    "application/json": components["schemas"]["Policy"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Refused before the route: the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    changePolicy: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PolicyChange"];
                "application/vnd.service-v1+json": components["schemas"]["PolicyChange"];
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["PolicyChanged"];
                    "application/json": components["schemas"]["PolicyChanged"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["PolicyDryRun"];
                    "application/json": components["schemas"]["PolicyDryRun"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listMailboxes: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["MailboxListing"];
                    "application/json": components["schemas"]["MailboxListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    addMailbox: {
        parameters: {
            query?: never;
            header?: {
                /** @description A key of your own for this request (draft-ietf-httpapi-idempotency-key-header; "quoted" or bare, 1 to 255 visible ASCII characters), unique per request: a repeat with the same key and the same request within 24 hours is answered with the first answer (Idempotent-Replayed: true) and does nothing again. */
                "Idempotency-Key"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NewMailbox"];
                "application/vnd.service-v1+json": components["schemas"]["NewMailbox"];
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Mailbox"];
                    "application/json": components["schemas"]["Mailbox"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            415: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unprocessable: this Idempotency-Key was sent with another request (method, address or body) within 24 hours. JSON {error: "idempotency_key_reused", message}. */
            422: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listMailboxesHead: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["MailboxListing"];
                    "application/json": components["schemas"]["MailboxListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    removeMailbox: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                site: string;
                /** @description The mailbox address. */
                address: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            204: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listWebhooks: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["WebhookListing"];
                    "application/json": components["schemas"]["WebhookListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    addWebhook: {
        parameters: {
            query?: never;
            header?: {
                /** @description A key of your own for this request (draft-ietf-httpapi-idempotency-key-header; "quoted" or bare, 1 to 255 visible ASCII characters), unique per request: a repeat with the same key and the same request within 24 hours is answered with the first answer (Idempotent-Replayed: true) and does nothing again. */
                "Idempotency-Key"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NewWebhook"];
                "application/vnd.service-v1+json": components["schemas"]["NewWebhook"];
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["WebhookWithSecret"];
                    "application/json": components["schemas"]["WebhookWithSecret"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Conflict: the first request with this Idempotency-Key is still being answered (JSON {error: "idempotency_key_in_use", message}); repeat it after Retry-After. Other routes answer 409 for their own conflicts too. */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unprocessable: this Idempotency-Key was sent with another request (method, address or body) within 24 hours. JSON {error: "idempotency_key_reused", message}. */
            422: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listWebhooksHead: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["WebhookListing"];
                    "application/json": components["schemas"]["WebhookListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    getWebhook: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
                /** @description The webhook id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Webhook"];
                    "application/json": components["schemas"]["Webhook"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    removeWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                site: string;
                /** @description The webhook id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            204: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    getWebhookHead: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
                /** @description The webhook id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Webhook"];
                    "application/json": components["schemas"]["Webhook"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    changeWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                site: string;
                /** @description The webhook id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["WebhookChange"];
                "application/vnd.service-v1+json": components["schemas"]["WebhookChange"];
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Webhook"];
                    "application/json": components["schemas"]["Webhook"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    rotateWebhookSecret: {
        parameters: {
            query?: never;
            header?: {
                /** @description A key of your own for this request (draft-ietf-httpapi-idempotency-key-header; "quoted" or bare, 1 to 255 visible ASCII characters), unique per request: a repeat with the same key and the same request within 24 hours is answered with the first answer (Idempotent-Replayed: true) and does nothing again. */
                "Idempotency-Key"?: string;
            };
            path: {
                site: string;
                /** @description The webhook id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["WebhookWithSecret"];
                    "application/json": components["schemas"]["WebhookWithSecret"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Conflict: the first request with this Idempotency-Key is still being answered (JSON {error: "idempotency_key_in_use", message}); repeat it after Retry-After. Other routes answer 409 for their own conflicts too. */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unprocessable: this Idempotency-Key was sent with another request (method, address or body) within 24 hours. JSON {error: "idempotency_key_reused", message}. */
            422: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    testWebhook: {
        parameters: {
            query?: never;
            header?: {
                /** @description A key of your own for this request (draft-ietf-httpapi-idempotency-key-header; "quoted" or bare, 1 to 255 visible ASCII characters), unique per request: a repeat with the same key and the same request within 24 hours is answered with the first answer (Idempotent-Replayed: true) and does nothing again. */
                "Idempotency-Key"?: string;
            };
            path: {
                site: string;
                /** @description The webhook id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            202: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["QueuedEvent"];
                    "application/json": components["schemas"]["QueuedEvent"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Conflict: the first request with this Idempotency-Key is still being answered (JSON {error: "idempotency_key_in_use", message}); repeat it after Retry-After. Other routes answer 409 for their own conflicts too. */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unprocessable: this Idempotency-Key was sent with another request (method, address or body) within 24 hours. JSON {error: "idempotency_key_reused", message}. */
            422: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listWebhookDeliveries: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
                /** @description The webhook id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["WebhookDeliveryListing"];
                    "application/json": components["schemas"]["WebhookDeliveryListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listWebhookDeliveriesHead: {
        parameters: {
            query?: never;
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
                /** @description The webhook id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["WebhookDeliveryListing"];
                    "application/json": components["schemas"]["WebhookDeliveryListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    redeliverWebhook: {
        parameters: {
            query?: never;
            header?: {
                /** @description A key of your own for this request (draft-ietf-httpapi-idempotency-key-header; "quoted" or bare, 1 to 255 visible ASCII characters), unique per request: a repeat with the same key and the same request within 24 hours is answered with the first answer (Idempotent-Replayed: true) and does nothing again. */
                "Idempotency-Key"?: string;
            };
            path: {
                site: string;
                /** @description The webhook id. */
                id: number;
                /** @description The delivery id. */
                delivery: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            202: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["QueuedEvent"];
                    "application/json": components["schemas"]["QueuedEvent"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Conflict: the first request with this Idempotency-Key is still being answered (JSON {error: "idempotency_key_in_use", message}); repeat it after Retry-After. Other routes answer 409 for their own conflicts too. */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unprocessable: this Idempotency-Key was sent with another request (method, address or body) within 24 hours. JSON {error: "idempotency_key_reused", message}. */
            422: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listSavedReplies: {
        parameters: {
            query?: {
                /** @description Fill the placeholders in for this discussion. */
                discussion?: number;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["SavedReplyListing"];
                    "application/json": components["schemas"]["SavedReplyListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    addSavedReply: {
        parameters: {
            query?: never;
            header?: {
                /** @description A key of your own for this request (draft-ietf-httpapi-idempotency-key-header; "quoted" or bare, 1 to 255 visible ASCII characters), unique per request: a repeat with the same key and the same request within 24 hours is answered with the first answer (Idempotent-Replayed: true) and does nothing again. */
                "Idempotency-Key"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NewSavedReply"];
                "application/vnd.service-v1+json": components["schemas"]["NewSavedReply"];
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["SavedReply"];
                    "application/json": components["schemas"]["SavedReply"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unprocessable: this Idempotency-Key was sent with another request (method, address or body) within 24 hours. JSON {error: "idempotency_key_reused", message}. */
            422: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    listSavedRepliesHead: {
        parameters: {
            query?: {
                /** @description Fill the placeholders in for this discussion. */
                discussion?: number;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["SavedReplyListing"];
                    "application/json": components["schemas"]["SavedReplyListing"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    getSavedReply: {
        parameters: {
            query?: {
                /** @description Fill the placeholders in for this discussion. */
                discussion?: number;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
                /** @description The saved reply id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["SavedReply"];
                    "application/json": components["schemas"]["SavedReply"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    removeSavedReply: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                site: string;
                /** @description The saved reply id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            204: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    getSavedReplyHead: {
        parameters: {
            query?: {
                /** @description Fill the placeholders in for this discussion. */
                discussion?: number;
            };
            header?: {
                /** @description The ETag of an answer you hold (or several, or *): while it is still current, the answer is 304 with no body. */
                "If-None-Match"?: string;
            };
            path: {
                site: string;
                /** @description The saved reply id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["SavedReply"];
                    "application/json": components["schemas"]["SavedReply"];
                };
            };
            /** @description Not Modified: the If-None-Match names the current ETag. No body. */
            304: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    changeSavedReply: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                site: string;
                /** @description The saved reply id. */
                id: number;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SavedReplyChange"];
                "application/vnd.service-v1+json": components["schemas"]["SavedReplyChange"];
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    Deprecation: components["headers"]["Deprecation"];
                    Link: components["headers"]["Link"];
                    ETag: components["headers"]["ETag"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["SavedReply"];
                    "application/json": components["schemas"]["SavedReply"];
                };
            };
            /** @description The request is invalid: JSON {error, message, fields} naming each field at fault; or the credential was sent wrongly (more than one, or a token in the URL): text/plain, with a WWW-Authenticate challenge whose error is "invalid_request". */
            400: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["ValidationError"];
                    "application/json": components["schemas"]["ValidationError"];
                    "text/plain": string;
                };
            };
            /** @description No credential, or one that is wrong, revoked, expired or made for another site. WWW-Authenticate carries the challenge. */
            401: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description A Read only token on a write, or a credential whose owner is not on the site's support staff. */
            403: {
                headers: {
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Accept header allows neither application/vnd.service-v1+json nor application/json. */
            406: {
                headers: {
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            409: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "Service-Token-Expiration": components["headers"]["Service-Token-Expiration"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/vnd.service-v1+json": components["schemas"]["Error"];
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: past the rate limit of the credential (reads or writes) or, without an accepted credential, of the client address (JSON {error: "rate_limited", message}); or too many failed authentications from this address or for this account (text/plain). Retry-After says when to try again. */
            429: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                    "text/plain": string;
                };
            };
            /** @description The database or the password checks are busy for a moment. Retry-After says when to try again. */
            503: {
                headers: {
                    "Retry-After": components["headers"]["Retry-After"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Used": components["headers"]["X-RateLimit-Used"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "X-RateLimit-Resource": components["headers"]["X-RateLimit-Resource"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    discussionCreatedEvent: {
        parameters: {
            query?: never;
            header: {
                /** @description The event id, msg_...: the same on every try of one event; deduplicate by it. */
                "webhook-id": string;
                /** @description When this try was signed, in seconds since the epoch; refuse one far from now. */
                "webhook-timestamp": string;
                /** @description v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" under the secret>; during a rotation two, separated by a space. */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @constant */
                    type: "discussion.created";
                    /**
                     * Format: date-time
                     * @description When it happened, to the millisecond.
                     */
                    timestamp: string;
                    data: components["schemas"]["DiscussionWithComments"];
                };
            };
        };
        responses: {
            /** @description Any 2xx: delivered. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    discussionUpdatedEvent: {
        parameters: {
            query?: never;
            header: {
                /** @description The event id, msg_...: the same on every try of one event; deduplicate by it. */
                "webhook-id": string;
                /** @description When this try was signed, in seconds since the epoch; refuse one far from now. */
                "webhook-timestamp": string;
                /** @description v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" under the secret>; during a rotation two, separated by a space. */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @constant */
                    type: "discussion.updated";
                    /**
                     * Format: date-time
                     * @description When it happened, to the millisecond.
                     */
                    timestamp: string;
                    data: components["schemas"]["Discussion"];
                };
            };
        };
        responses: {
            /** @description Any 2xx: delivered. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    discussionDeletedEvent: {
        parameters: {
            query?: never;
            header: {
                /** @description The event id, msg_...: the same on every try of one event; deduplicate by it. */
                "webhook-id": string;
                /** @description When this try was signed, in seconds since the epoch; refuse one far from now. */
                "webhook-timestamp": string;
                /** @description v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" under the secret>; during a rotation two, separated by a space. */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @constant */
                    type: "discussion.deleted";
                    /**
                     * Format: date-time
                     * @description When it happened, to the millisecond.
                     */
                    timestamp: string;
                    data: components["schemas"]["Discussion"];
                };
            };
        };
        responses: {
            /** @description Any 2xx: delivered. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    discussionRestoredEvent: {
        parameters: {
            query?: never;
            header: {
                /** @description The event id, msg_...: the same on every try of one event; deduplicate by it. */
                "webhook-id": string;
                /** @description When this try was signed, in seconds since the epoch; refuse one far from now. */
                "webhook-timestamp": string;
                /** @description v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" under the secret>; during a rotation two, separated by a space. */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @constant */
                    type: "discussion.restored";
                    /**
                     * Format: date-time
                     * @description When it happened, to the millisecond.
                     */
                    timestamp: string;
                    data: components["schemas"]["Discussion"];
                };
            };
        };
        responses: {
            /** @description Any 2xx: delivered. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    commentCreatedEvent: {
        parameters: {
            query?: never;
            header: {
                /** @description The event id, msg_...: the same on every try of one event; deduplicate by it. */
                "webhook-id": string;
                /** @description When this try was signed, in seconds since the epoch; refuse one far from now. */
                "webhook-timestamp": string;
                /** @description v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" under the secret>; during a rotation two, separated by a space. */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @constant */
                    type: "comment.created";
                    /**
                     * Format: date-time
                     * @description When it happened, to the millisecond.
                     */
                    timestamp: string;
                    data: components["schemas"]["Comment"];
                };
            };
        };
        responses: {
            /** @description Any 2xx: delivered. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    tokenCreatedEvent: {
        parameters: {
            query?: never;
            header: {
                /** @description The event id, msg_...: the same on every try of one event; deduplicate by it. */
                "webhook-id": string;
                /** @description When this try was signed, in seconds since the epoch; refuse one far from now. */
                "webhook-timestamp": string;
                /** @description v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" under the secret>; during a rotation two, separated by a space. */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @constant */
                    type: "token.created";
                    /**
                     * Format: date-time
                     * @description When it happened, to the millisecond.
                     */
                    timestamp: string;
                    data: components["schemas"]["Credential"];
                };
            };
        };
        responses: {
            /** @description Any 2xx: delivered. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    tokenRevokedEvent: {
        parameters: {
            query?: never;
            header: {
                /** @description The event id, msg_...: the same on every try of one event; deduplicate by it. */
                "webhook-id": string;
                /** @description When this try was signed, in seconds since the epoch; refuse one far from now. */
                "webhook-timestamp": string;
                /** @description v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" under the secret>; during a rotation two, separated by a space. */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @constant */
                    type: "token.revoked";
                    /**
                     * Format: date-time
                     * @description When it happened, to the millisecond.
                     */
                    timestamp: string;
                    data: components["schemas"]["Credential"];
                };
            };
        };
        responses: {
            /** @description Any 2xx: delivered. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    tokenLeakedEvent: {
        parameters: {
            query?: never;
            header: {
                /** @description The event id, msg_...: the same on every try of one event; deduplicate by it. */
                "webhook-id": string;
                /** @description When this try was signed, in seconds since the epoch; refuse one far from now. */
                "webhook-timestamp": string;
                /** @description v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" under the secret>; during a rotation two, separated by a space. */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @constant */
                    type: "token.leaked";
                    /**
                     * Format: date-time
                     * @description When it happened, to the millisecond.
                     */
                    timestamp: string;
                    data: components["schemas"]["Credential"];
                };
            };
        };
        responses: {
            /** @description Any 2xx: delivered. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    applicationAuthorizedEvent: {
        parameters: {
            query?: never;
            header: {
                /** @description The event id, msg_...: the same on every try of one event; deduplicate by it. */
                "webhook-id": string;
                /** @description When this try was signed, in seconds since the epoch; refuse one far from now. */
                "webhook-timestamp": string;
                /** @description v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" under the secret>; during a rotation two, separated by a space. */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @constant */
                    type: "application.authorized";
                    /**
                     * Format: date-time
                     * @description When it happened, to the millisecond.
                     */
                    timestamp: string;
                    data: components["schemas"]["Credential"];
                };
            };
        };
        responses: {
            /** @description Any 2xx: delivered. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    webhookTestEvent: {
        parameters: {
            query?: never;
            header: {
                /** @description The event id, msg_...: the same on every try of one event; deduplicate by it. */
                "webhook-id": string;
                /** @description When this try was signed, in seconds since the epoch; refuse one far from now. */
                "webhook-timestamp": string;
                /** @description v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" under the secret>; during a rotation two, separated by a space. */
                "webhook-signature": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @constant */
                    type: "webhook.test";
                    /**
                     * Format: date-time
                     * @description When it happened, to the millisecond.
                     */
                    timestamp: string;
                    data: {
                        webhook: components["schemas"]["Webhook"];
                    };
                };
            };
        };
        responses: {
            /** @description Any 2xx: delivered. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
}
