-- Tenants' WebAssembly policies, kept by content: an API's mediation policy names one by
-- its digest, gateways fetch it by that digest. Bytes in base64, as every binary here.
CREATE TABLE wasm_policies (
    digest     TEXT PRIMARY KEY,         -- SHA-256 of the bytes, lower-case hex
    size       BIGINT NOT NULL,
    bytes      TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

-- A mediation policy is a Synapse sequence (config) or a Wasm policy (wasm_digest, with
-- the most body bytes it is given; config then empty).
ALTER TABLE api_mediation_policies ADD COLUMN wasm_digest TEXT;
ALTER TABLE api_mediation_policies ADD COLUMN body_bytes BIGINT;
ALTER TABLE api_mediation_policies ADD COLUMN wasm_size BIGINT;
