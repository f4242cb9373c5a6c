-- `sessions_from` counts milliseconds from here on (access tokens carry `iat_ms`), so that
-- an account change ends the tokens issued before it in the same second too.
UPDATE users SET sessions_from = sessions_from * 1000;
