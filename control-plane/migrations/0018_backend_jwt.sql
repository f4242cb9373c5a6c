-- Tenants whose APIs' backends get WSO2's backend JWT (X-JWT-Assertion): a row is a
-- tenant administrator's switch turned on.
CREATE TABLE backend_jwt_tenants (
    tenant     TEXT PRIMARY KEY,
    changed_at BIGINT NOT NULL
);
