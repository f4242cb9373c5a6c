-- The route manifest as keyed entries (apim-manifest): each row holds an entry's JSON and
-- the manifest version that last changed it; a removed entry stays as a tombstone (value
-- NULL) so that gateways catching up learn of the removal. A gateway at version v reads
-- the rows with version > v. Tombstones are dropped after a day; `horizon` is the newest
-- version dropped, and a gateway older than it takes a snapshot instead.
CREATE TABLE manifest_entries (
    key        TEXT PRIMARY KEY,
    value      TEXT,
    version    BIGINT NOT NULL,
    changed_at BIGINT NOT NULL
);
CREATE INDEX manifest_entries_version ON manifest_entries (version, key);

ALTER TABLE manifest_state ADD COLUMN horizon BIGINT NOT NULL DEFAULT 0;

-- Bumped by every change of an API's row, so that the compiler recompiles only the APIs
-- that changed since it last looked.
ALTER TABLE apis ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;

-- What every compile reads of every API, from the index alone (not the records).
CREATE INDEX apis_revision ON apis (id, revision, status);

-- The publisher's uniqueness check looks APIs up by name whatever its case.
CREATE INDEX apis_tenant_name_lower ON apis (tenant, LOWER(name));
