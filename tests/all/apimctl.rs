//! `apimctl` as a team uses it from a pipeline: the real binary, with its own
//! configuration folder, against a real control plane. A directory of projects exported
//! into git is planned (nothing to change, then exactly the edited field), applied
//! exactly as planned (refused when the estate moved), applied again with no change,
//! with parameters per environment, creations, and prunes of managed APIs only.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use harness::stack::ALL_SCOPES;
use harness::steps::Steps;
use harness::{ADMIN_PASSWORD, PUBLISHER, STORE};
use serde_json::{Value, json};

use crate::Env;
use crate::archives::populated_api;

/// What a run of apimctl gave.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|err| panic!("not JSON ({err}): {}\n{}", self.stdout, self.stderr))
    }
}

/// apimctl with its own configuration folder.
struct Cli {
    config: PathBuf,
}

impl Cli {
    async fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let output = tokio::process::Command::new(harness::binary("apimctl"))
            .args(args)
            .env("APIMCTL_CONFIG_DIR", &self.config)
            .envs(env.iter().copied())
            .output()
            .await
            .expect("apimctl runs");
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// A run that must end with `code`.
    async fn expect(&self, code: i32, args: &[&str]) -> Run {
        let run = self.run(args, &[]).await;
        assert_eq!(
            run.code, code,
            "apimctl {args:?}\nstdout: {}\nstderr: {}",
            run.stdout, run.stderr
        );
        run
    }
}

fn edit_model(project: &Path, edit: impl FnOnce(&mut Value)) {
    let file = project.join("Meta-information/api.json");
    let mut model: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    edit(&mut model);
    std::fs::write(&file, serde_json::to_vec_pretty(&model).unwrap()).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

pub async fn gitops_plans_and_applies_exactly(env: Env) {
    let api = &env.api;
    let admin = api.login("admin", ADMIN_PASSWORD, ALL_SCOPES).await;
    let pets = populated_api(api, &admin).await;
    Steps::new(api, &admin)
        .lifecycle(&pets, "Publish")
        .await
        .unwrap();
    let work = harness::temp_dir();
    let cli = Cli {
        config: work.join("config"),
    };
    let git = work.join("estate");
    let url = env.control_plane.url.clone();

    // An environment and a login: the token kept owner-only, the password never a flag.
    cli.expect(0, &["env", "add", "local", "--url", &url]).await;
    let no_password = cli.run(&["login", "local", "-u", "admin"], &[]).await;
    assert_eq!(no_password.code, 1);
    assert!(
        no_password.stderr.contains("APIMCTL_PASSWORD"),
        "{}",
        no_password.stderr
    );
    let login = cli
        .run(
            &["login", "local", "-u", "admin"],
            &[("APIMCTL_PASSWORD", ADMIN_PASSWORD)],
        )
        .await;
    assert_eq!(login.code, 0, "{}", login.stderr);
    let token_file = cli.config.join("tokens/local.json");
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&token_file), 0o600);
    assert_eq!(mode(&cli.config), 0o700);
    let help = cli.expect(0, &["login", "--help"]).await;
    assert!(!help.stdout.contains("--password "), "no password flag");

    // Exported into git, the directory plans to nothing.
    let exported = cli
        .expect(
            0,
            &[
                "--output",
                "json",
                "export",
                "--env",
                "local",
                "--dir",
                git.to_str().unwrap(),
            ],
        )
        .await;
    assert_eq!(exported.json()[0]["name"], "Pets");
    let project = git.join("Pets-v1.0.0");
    let dir = git.to_str().unwrap();
    let unchanged = cli.expect(0, &["plan", "--env", "local", dir]).await;
    assert!(
        unchanged.stdout.contains("No changes."),
        "{}",
        unchanged.stdout
    );

    // One edited field is exactly that field.
    edit_model(&project, |model| {
        model["description"] = json!("Pets, as git has them")
    });
    let edited = cli
        .expect(2, &["--output", "json", "plan", "--env", "local", dir])
        .await
        .json();
    let step = &edited["steps"][0];
    assert_eq!(step["action"], "change");
    assert_eq!(
        step["changes"],
        json!([{"path": "description", "from": "REST facade for developers and their repositories",
                "to": "Pets, as git has them"}])
    );

    // A saved plan is refused once the estate moves under it.
    let plan_file = work.join("plan.json");
    let plan_path = plan_file.to_str().unwrap();
    cli.expect(2, &["plan", "--env", "local", dir, "--out", plan_path])
        .await;
    let path = format!("{PUBLISHER}/apis/{pets}");
    let mut record: Value = api.get(&path, &admin).await.expect(200).body;
    record["tags"] = json!(["moved"]);
    api.put_json(&path, &admin, &record).await.expect(200);
    let refused = cli
        .expect(1, &["apply", "--env", "local", dir, "--plan", plan_path])
        .await;
    assert!(
        refused.stderr.contains("moved since the plan was made"),
        "{}",
        refused.stderr
    );
    let record: Value = api.get(&path, &admin).await.expect(200).body;
    assert_eq!(
        record["description"],
        "REST facade for developers and their repositories"
    );

    // Planned again, applied exactly; a second apply changes nothing.
    let replanned = cli
        .expect(
            2,
            &[
                "--output", "json", "plan", "--env", "local", dir, "--out", plan_path,
            ],
        )
        .await
        .json();
    let paths: Vec<&str> = replanned["steps"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["description", "tags"]);
    let applied = cli
        .expect(0, &["apply", "--env", "local", dir, "--plan", plan_path])
        .await;
    assert!(applied.stdout.contains("1 changed"), "{}", applied.stdout);
    let record: Value = api.get(&path, &admin).await.expect(200).body;
    assert_eq!(record["description"], "Pets, as git has them");
    assert_eq!(record["tags"], json!(["developers", "repositories"]));
    assert_eq!(
        record["status"], "PUBLISHED",
        "an apply keeps the lifecycle state"
    );
    assert_eq!(
        record["endpointSecurity"]["password"], "********",
        "the backend password, never in a project, stays"
    );
    let again = cli.expect(0, &["apply", "--env", "local", dir]).await;
    assert!(again.stdout.contains("No changes."), "{}", again.stdout);
    cli.expect(0, &["plan", "--env", "local", dir]).await;

    // Parameters per environment: the endpoints of this environment, never in git.
    let params = work.join("params.toml");
    std::fs::write(
        &params,
        "[local.\"Pets-v1.0.0\"]\nendpoint = \"http://127.0.0.1:9999/pets/\"\n",
    )
    .unwrap();
    let with_params = cli
        .expect(
            2,
            &[
                "--output",
                "json",
                "plan",
                "--env",
                "local",
                dir,
                "--params",
                params.to_str().unwrap(),
            ],
        )
        .await
        .json();
    let paths: Vec<&str> = with_params["steps"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "endpointConfig.production_endpoints.url",
            "endpointConfig.sandbox_endpoints.url"
        ]
    );
    let in_git = std::fs::read_to_string(project.join("Meta-information/api.json")).unwrap();
    assert!(
        !in_git.contains("9999"),
        "parameters are never written into the project"
    );
    std::fs::write(
        &params,
        "[local.\"Pets-v1.0.0\"]\nendpoint = \"http://127.0.0.1:9999/pets/\"\n\
         backend_password_env = \"PETS_BACKEND_PASSWORD\"\n",
    )
    .unwrap();
    let params_arg = [
        "apply",
        "--env",
        "local",
        dir,
        "--params",
        params.to_str().unwrap(),
    ];
    let unset = cli.expect(1, &params_arg).await;
    assert!(
        unset.stderr.contains("PETS_BACKEND_PASSWORD"),
        "{}",
        unset.stderr
    );
    let set = cli
        .run(&params_arg, &[("PETS_BACKEND_PASSWORD", "prod-secret")])
        .await;
    assert_eq!(set.code, 0, "{}", set.stderr);
    let record: Value = api.get(&path, &admin).await.expect(200).body;
    let config = record["endpointConfig"].as_str().unwrap();
    assert_eq!(config.matches("9999").count(), 2, "{config}");
    assert_eq!(record["endpointSecurity"]["password"], "********");
    assert!(!set.stdout.contains("prod-secret") && !set.stderr.contains("prod-secret"));

    // A new project is created; a managed API no project is goes only with --prune, and
    // an API the directory does not manage stays.
    let cats = git.join("Cats-v1.0.0");
    copy_dir(&project, &cats);
    edit_model(&cats, |model| {
        model["id"]["apiName"] = json!("Cats");
        model["context"] = json!("/cats/v1.0.0");
        model["contextTemplate"] = json!("/cats/{version}");
    });
    std::fs::remove_file(cats.join("Meta-information/endpoint_certificates.json")).ok();
    let created = cli.expect(2, &["plan", "--env", "local", dir]).await;
    assert!(
        created.stdout.contains("+ create Cats v1.0.0"),
        "{}",
        created.stdout
    );
    cli.expect(0, &["apply", "--env", "local", dir]).await;
    let mut dogs = harness::spec_api_record();
    dogs["name"] = json!("Dogs");
    dogs["context"] = json!("/dogs");
    Steps::new(api, &admin).create_api(&dogs).await.unwrap();
    std::fs::write(git.join("apimctl.toml"), "managed = [\"Cats\", \"Pets\"]\n").unwrap();
    std::fs::remove_dir_all(&cats).unwrap();
    cli.expect(0, &["plan", "--env", "local", dir]).await;
    let prune = cli
        .expect(2, &["plan", "--env", "local", dir, "--prune"])
        .await;
    assert!(
        prune.stdout.contains("- delete Cats v1.0.0"),
        "{}",
        prune.stdout
    );
    assert!(!prune.stdout.contains("Dogs"), "{}", prune.stdout);
    cli.expect(0, &["apply", "--env", "local", dir, "--prune"])
        .await;
    let names: Vec<String> = api
        .get(&format!("{PUBLISHER}/apis"), &admin)
        .await
        .expect(200)
        .body["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        names.contains(&"Dogs".to_string()) && !names.contains(&"Cats".to_string()),
        "{names:?}"
    );

    // A project that links outside itself is refused, and nothing is applied.
    std::os::unix::fs::symlink("/etc/passwd", project.join("Docs/passwd")).unwrap();
    let linked = cli.expect(1, &["apply", "--env", "local", dir]).await;
    assert!(linked.stderr.contains("symbolic link"), "{}", linked.stderr);
    std::fs::remove_file(project.join("Docs/passwd")).unwrap();

    // A whole tenant: its APIs and applications exported, then imported back.
    let mobile = Steps::new(api, &admin)
        .subscribed_application("Mobile", "Unlimited", &[&pets])
        .await
        .unwrap();
    let tenant = work.join("tenant");
    let tenant_dir = tenant.to_str().unwrap();
    cli.expect(
        0,
        &[
            "export",
            "--env",
            "local",
            "--dir",
            tenant_dir,
            "--applications",
        ],
    )
    .await;
    let app_file = tenant.join("applications/admin/Mobile/Mobile.json");
    let model: Value = serde_json::from_slice(&std::fs::read(&app_file).unwrap()).unwrap();
    assert_eq!(model["subscribedAPIs"][0]["apiId"]["apiName"], "Pets");
    assert!(
        tenant
            .join("Dogs-v1.0.0/Meta-information/api.json")
            .is_file()
    );
    api.delete(&format!("{STORE}/applications/{}", mobile.id), &admin)
        .await
        .expect(200);
    let whole = cli
        .expect(0, &["import", "--env", "local", tenant_dir, "--update"])
        .await;
    assert!(
        whole.stdout.contains("Mobile: imported"),
        "{}",
        whole.stdout
    );
    let apps = api
        .get(&format!("{STORE}/applications?query=Mobile"), &admin)
        .await
        .expect(200);
    let again = apps.body["list"][0]["applicationId"].as_str().unwrap();
    let subscriptions = api
        .get(
            &format!("{STORE}/subscriptions?applicationId={again}"),
            &admin,
        )
        .await
        .expect(200);
    assert_eq!(subscriptions.body["count"], 1);

    let completions = cli.expect(0, &["completions", "bash"]).await;
    assert!(completions.stdout.contains("apimctl"));
    let _ = std::fs::remove_dir_all(&work);
}
