-- What the publisher stores per API beside its record: documents and their content, the
-- thumbnail, the WSDL and API-specific mediation policies (WSO2 v0.14). Each row goes
-- with its API (ON DELETE CASCADE; SQLite enforces it with `PRAGMA foreign_keys`, set on
-- every connection in db.rs). Binary content (files, images) is base64 in TEXT, the one
-- type both databases share through sqlx's Any driver.

CREATE TABLE api_documents (
    id              TEXT PRIMARY KEY,
    api_id          TEXT NOT NULL REFERENCES apis (id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    doc_type        TEXT NOT NULL,        -- HOWTO, SAMPLES, ..., OTHER
    other_type_name TEXT,
    summary         TEXT,
    source_type     TEXT NOT NULL,        -- INLINE, MARKDOWN, URL, FILE
    source_url      TEXT,
    visibility      TEXT NOT NULL,        -- OWNER_ONLY, PRIVATE, API_LEVEL
    content         TEXT,                 -- inline text, or a FILE's bytes in base64
    file_name       TEXT,
    media_type      TEXT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE UNIQUE INDEX api_documents_name ON api_documents (api_id, name);

CREATE TABLE api_thumbnails (
    api_id     TEXT PRIMARY KEY REFERENCES apis (id) ON DELETE CASCADE,
    media_type TEXT NOT NULL,
    image      TEXT NOT NULL,             -- base64
    updated_at BIGINT NOT NULL
);

CREATE TABLE api_wsdls (
    api_id     TEXT PRIMARY KEY REFERENCES apis (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    definition TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE api_mediation_policies (
    id          TEXT PRIMARY KEY,
    api_id      TEXT NOT NULL REFERENCES apis (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    flow        TEXT NOT NULL,            -- in, out, fault
    config      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE UNIQUE INDEX api_mediation_policies_name ON api_mediation_policies (api_id, flow, name);
