-- A blocked subscription its subscriber deletes is kept, marked, so that the block holds:
-- WSO2 keeps the row with SUBS_CREATE_STATE 'UN_SUBSCRIBE' (ApiMgtDAO.removeSubscription)
-- and refuses the same application's new subscription to the API while the row is blocked
-- (ApiMgtDAO.addSubscription). The store no longer shows it and application tokens get
-- none of its API's scopes; gateways refuse it as blocked; the publisher still lists it,
-- and unblocking it ends it.
ALTER TABLE subscriptions ADD COLUMN unsubscribed BIGINT NOT NULL DEFAULT 0;
