//! `cargo run -p tools --bin screenshots`: the README's pictures of the developer portal
//! and the publisher console, taken in Debian's Chromium from a local stack with a few
//! published APIs, a subscribed application and calls through the real gateway; written
//! to `docs/screenshots/`.

use std::path::PathBuf;

use harness::browser::Chromium;
use harness::stack::Launch;
use harness::steps::Steps;
use harness::{ADMIN_PASSWORD, Backend};
use serde_json::json;

#[tokio::main]
async fn main() {
    let out: PathBuf = harness::workspace_root().join("docs/screenshots");
    std::fs::create_dir_all(&out).expect("docs/screenshots");
    let settings = [(
        "APIM_MGMT_ADDR",
        format!("127.0.0.1:{}", harness::free_port()),
    )];
    let gateway = [("APIM_ANALYTICS_REPORT_MS", "200".to_string())];
    let stack = Launch {
        database: Backend::Sqlite,
        control_plane: &settings,
        gateway: &gateway,
        ..Default::default()
    }
    .start()
    .await;
    let base = stack.mgmt.base.clone();
    let cors = json!({"corsConfigurationEnabled": true, "accessControlAllowOrigins": ["*"],
        "accessControlAllowCredentials": false,
        "accessControlAllowHeaders": ["authorization", "content-type", "accept"],
        "accessControlAllowMethods": ["GET", "POST", "PUT", "DELETE", "OPTIONS"]});
    let mut pets = String::new();
    for (name, description, tags) in [
        (
            "Pets",
            "Everything about the shop's pets and their owners",
            ["animals", "shop"],
        ),
        (
            "Weather",
            "Forecasts and observations by the hour",
            ["weather", "open-data"],
        ),
        (
            "Payments",
            "Card and bank payments with refunds",
            ["finance", "shop"],
        ),
        (
            "Inventory",
            "Stock levels per warehouse",
            ["shop", "logistics"],
        ),
    ] {
        let changes = json!({"description": description, "tags": tags, "corsConfiguration": cors});
        let id = stack.api(name, changes, &["Publish"]).await;
        if name == "Pets" {
            pets = id;
        }
    }
    stack
        .mgmt
        .add_user("erin", "erin-pw-1", &["subscriber"])
        .await;
    let erin = stack.mgmt.login("erin", "erin-pw-1", "mgr:subscribe").await;
    let app = Steps::new(&stack.mgmt, &erin)
        .subscribed_application("Mobile app", "Unlimited", &[&pets])
        .await
        .expect("an application");
    let token = stack.app_token(&app.keys.key, &app.keys.secret, &[]).await;
    let path = "/pets/v1.0.0/devs/alice";
    harness::eventually(&stack.gw, reqwest::Method::GET, path, &token, |r| {
        r.status == 200
    })
    .await;
    for _ in 0..40 {
        stack.gw.get(path, &token).await;
    }

    let chromium = Chromium::start().await;
    chromium
        .open(&format!(
            "{base}/devportal/login?next=%2Fdevportal%2Fapis%2F{pets}"
        ))
        .await;
    chromium.fill("username", "erin").await;
    chromium.fill("password", "erin-pw-1\u{E007}").await;
    chromium.wait_for_text("Allow access?").await;
    chromium.click_button("Allow").await;
    chromium.wait_for_text("Try it").await;
    chromium.open(&format!("{base}/devportal")).await;
    chromium.wait_for_text("Inventory").await;
    chromium
        .screenshot(&out.join("devportal-catalogue.png"))
        .await;
    chromium
        .open(&format!("{base}/devportal/apis/{pets}"))
        .await;
    chromium.wait_for_text("Try it").await;
    chromium.choose("try-application", "Mobile app").await;
    chromium.replace("try-path", "/devs/alice").await;
    chromium.click_button("Send").await;
    chromium.wait_for_text("200 OK").await;
    chromium
        .client
        .execute(
            "document.getElementById('try-path').scrollIntoView()",
            vec![],
        )
        .await
        .expect("scrolled");
    chromium.screenshot(&out.join("devportal-try-it.png")).await;
    chromium.close().await;

    let provider = Chromium::start().await;
    provider
        .open(&format!(
            "{base}/publisher/login?next=%2Fpublisher%2Fapis%2F{pets}"
        ))
        .await;
    provider.fill("username", "admin").await;
    provider
        .fill("password", &format!("{ADMIN_PASSWORD}\u{E007}"))
        .await;
    provider.wait_for_text("Allow access?").await;
    provider.click_button("Allow").await;
    provider.wait_for_text("Mobile app").await;
    provider
        .client
        .execute(
            "document.getElementById('lifecycle').scrollIntoView()",
            vec![],
        )
        .await
        .expect("scrolled");
    provider.screenshot(&out.join("publisher-api.png")).await;
    provider.close().await;
    println!("screenshots written to {}", out.display());
}
