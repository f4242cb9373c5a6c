-- Management tokens issued (`iat`, Unix seconds) before this moment no longer act for the
-- account: set when it is created, when its roles change and when its password is reset,
-- so a demoted user's tokens lose their scopes at once and a name deleted and created
-- again does not bring its old tokens back.
ALTER TABLE users ADD COLUMN sessions_from BIGINT NOT NULL DEFAULT 0;
