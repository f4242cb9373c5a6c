//! WSO2's contracts whole: every operation of the publisher's and the store's v0.14
//! Swagger files is served. Each is called with the administrator's token and ids that
//! name nothing, so each answers as the operation does for an unknown resource (or a
//! refused body), never with the router's own 404 or 405; the harness's client checks
//! each answer against the contract as it arrives.

use harness::stack::ALL_SCOPES;

use crate::InProcess;

/// The id every path parameter gets: names no API, application, document or tier.
const NOBODY: &str = "00000000-0000-0000-0000-000000000000";

pub async fn every_operation_of_wso2s_contracts_is_served(env: InProcess) {
    let admin = env
        .api
        .login("admin", harness::ADMIN_PASSWORD, ALL_SCOPES)
        .await;
    let operations = harness::contract::operations(NOBODY);
    assert_eq!(
        operations.len(),
        72,
        "WSO2's two contracts hold 72 operations"
    );
    let mut unserved = Vec::new();
    for (method, path) in operations {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let request = env.api.request(method.clone(), &path, &admin);
        let reply = env.api.send(request).await;
        let routed = reply.status != 405
            && !(reply.status == 404 && reply.body.to_string().contains("No resource at"));
        assert!(
            reply.status < 500,
            "{method} {path} answered {}: {}",
            reply.status,
            reply.body
        );
        if !routed {
            unserved.push(format!("{method} {path}"));
        }
    }
    assert!(unserved.is_empty(), "operations not served: {unserved:#?}");
}
