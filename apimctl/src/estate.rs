//! Projects between a directory and an environment: `export`, `import`, and for a
//! directory kept in git, `plan` (what applying it would create, change field by field,
//! and with `--prune` delete) and `apply` (exactly that plan, refused when the estate or
//! the directory moved since it was made).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use apim_archive::Project;
use apim_archive::plan::{Change, Compared, fingerprint, model_of};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::cli;
use crate::client::{Api, Listed};
use crate::config::Folder;
use crate::output::Output;
use crate::params::{self, Params};

/// `plan`'s exit code when it finds changes.
const CHANGES: u8 = 2;

/// `export`: every API of the tenant (or one), each written as its project's folder.
pub async fn export(
    folder: &Folder,
    export: cli::Export,
    output: &Output,
) -> anyhow::Result<ExitCode> {
    let api = Api::connect(folder, &export.env).await?;
    let wanted: Vec<Listed> = api
        .list()
        .await?
        .into_iter()
        .filter(|l| export.name.as_ref().is_none_or(|n| *n == l.name))
        .filter(|l| export.version.as_ref().is_none_or(|v| *v == l.version))
        .collect();
    if wanted.is_empty() && !export.applications {
        bail!("No API to export");
    }
    let applications = if export.applications {
        api.list_applications().await?
    } else {
        Vec::new()
    };
    let bar = output.progress(wanted.len() + applications.len());
    let mut written = Vec::new();
    for listed in &wanted {
        bar.set_message(format!("{} {}", listed.name, listed.version));
        let project = Project::from_zip(&api.export(listed).await?)
            .map_err(|refusal| anyhow::anyhow!("{}: {refusal}", listed.name))?;
        let path = replace_project(&project, &export.dir)?;
        written.push(json!({"name": listed.name, "version": listed.version, "path": path}));
        bar.inc(1);
    }
    for (owner, name) in &applications {
        bar.set_message(format!("{name} of {owner}"));
        let project = Project::from_zip(&api.export_application(owner, name).await?)
            .map_err(|refusal| anyhow::anyhow!("{name}: {refusal}"))?;
        let folder = export
            .dir
            .join("applications")
            .join(owner.replace('@', "-AT-"));
        let path = replace_project(&project, &folder)?;
        written.push(json!({"application": name, "owner": owner, "path": path}));
        bar.inc(1);
    }
    bar.finish_and_clear();
    output.list(&written, |item| {
        format!("Exported {}", item["path"].as_str().unwrap_or_default())
    });
    Ok(ExitCode::SUCCESS)
}

/// Writes `project` under `dir`, in place of the folder an earlier export wrote there (a
/// file it no longer has must not stay behind); a folder that is no project is never
/// removed.
fn replace_project(project: &Project, dir: &Path) -> anyhow::Result<PathBuf> {
    let target = dir.join(&project.root);
    let earlier = target.join("Meta-information").is_dir()
        || target.join(format!("{}.json", project.root)).is_file();
    if earlier {
        std::fs::remove_dir_all(&target).with_context(|| format!("{}", target.display()))?;
    }
    project
        .write_to(dir)
        .with_context(|| format!("write {}", project.root))
}

/// A project from a folder or a zip.
fn read_project(path: &Path) -> anyhow::Result<Project> {
    let read = if path.is_dir() {
        Project::from_dir(path)
    } else {
        let bytes = std::fs::read(path).with_context(|| format!("{}", path.display()))?;
        Project::from_zip(&bytes)
    };
    read.map_err(|refusal| anyhow::anyhow!("{}: {refusal}", path.display()))
}

/// Who a project's API is: name, version, provider.
fn identity(project: &Project) -> anyhow::Result<(String, String, String)> {
    let (model, _) = model_of(project).map_err(|why| anyhow::anyhow!("{}: {why}", project.root))?;
    let id = model
        .id
        .with_context(|| format!("{}: the model has no id", project.root))?;
    Ok((
        id.api_name,
        id.version,
        id.provider_name.replace("-AT-", "@"),
    ))
}

/// The API of the estate a project is: by name and version, which are unique in a
/// tenant (the provider may differ: a creator's import is provided by the creator).
fn find<'a>(
    listed: &'a [Listed],
    (name, version, _): &(String, String, String),
) -> Option<&'a Listed> {
    listed
        .iter()
        .find(|l| l.name == *name && l.version == *version)
}

fn zip_of(project: &Project) -> anyhow::Result<Vec<u8>> {
    Ok(project.to_zip()?)
}

/// What a path given to `import` holds.
enum Importable {
    Api(Project),
    Application(Project),
}

/// Whether a project is an application's (`<Name>.json` at its root, no model of an API).
fn is_application(project: &Project) -> bool {
    project.file(&format!("{}.json", project.root)).is_some()
        && !project
            .files
            .keys()
            .any(|p| p.starts_with("Meta-information/"))
}

/// The projects `path` holds: one project (a folder or a zip), or a directory of them as
/// `export --applications` writes a tenant (its API folders, then
/// `applications/<owner>/<Name>/`).
fn importables(path: &Path) -> anyhow::Result<Vec<Importable>> {
    let single = !path.is_dir()
        || path.join("Meta-information").is_dir()
        || path
            .file_name()
            .is_some_and(|name| path.join(name).with_extension("json").is_file());
    if single {
        let project = read_project(path)?;
        return Ok(vec![if is_application(&project) {
            Importable::Application(project)
        } else {
            Importable::Api(project)
        }]);
    }
    let mut found = Vec::new();
    for folder in sorted_folders(path)? {
        if folder.join("Meta-information").is_dir() {
            found.push(Importable::Api(read_project(&folder)?));
        }
    }
    let applications = path.join("applications");
    if applications.is_dir() {
        for owner in sorted_folders(&applications)? {
            for folder in sorted_folders(&owner)? {
                found.push(Importable::Application(read_project(&folder)?));
            }
        }
    }
    if found.is_empty() {
        bail!("{} holds no project", path.display());
    }
    Ok(found)
}

/// The folders in `dir`, by name.
fn sorted_folders(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut folders: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("{}", dir.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_dir() && !path.is_symlink())
        .collect();
    folders.sort();
    Ok(folders)
}

/// `import`: each project created (or, with `--update`, imported over its API); an
/// application for the owner it names.
pub async fn import(
    folder: &Folder,
    import: cli::Import,
    output: &Output,
) -> anyhow::Result<ExitCode> {
    let api = Api::connect(folder, &import.env).await?;
    let params = params::load(import.params.as_deref(), &import.env)?;
    let listed = if import.update {
        api.list().await?
    } else {
        Vec::new()
    };
    let preserve = !import.no_preserve_provider;
    let mut projects = Vec::new();
    for path in &import.projects {
        projects.extend(importables(path)?);
    }
    let bar = output.progress(projects.len());
    let mut done = Vec::new();
    for importable in projects {
        let mut project = match importable {
            Importable::Api(project) => project,
            Importable::Application(project) => {
                let note = match api.import_application(zip_of(&project)?).await? {
                    Some(said) if said["list"].is_array() => {
                        format!("imported; subscriptions skipped: {}", said["list"])
                    }
                    Some(_) => "imported".to_string(),
                    // Applications are not updated: one of that name and owner stays.
                    None if import.update => "there already; left as it is".to_string(),
                    None => bail!(
                        "{}: the owner has an application of that name (--update leaves it)",
                        project.root
                    ),
                };
                done.push(json!({"project": project.root, "application": true, "said": note}));
                bar.inc(1);
                continue;
            }
        };
        let given = params.get(&project.root).cloned().unwrap_or_default();
        params::apply(&mut project, &given)?;
        let existing = find(&listed, &identity(&project)?).map(|l| l.id.clone());
        let (id, said) = match &existing {
            Some(id) => api.update(id, zip_of(&project)?, preserve).await?,
            None => api.import(zip_of(&project)?, preserve).await?,
        };
        if let Some(password) = params::backend_password(&given)? {
            api.set_backend_password(&id, &password).await?;
        }
        done.push(json!({"project": project.root, "id": id, "said": said}));
        bar.inc(1);
    }
    bar.finish_and_clear();
    output.list(&done, |item| {
        format!(
            "{}: {}",
            item["project"].as_str().unwrap_or_default(),
            item["said"].as_str().unwrap_or_default()
        )
    });
    Ok(ExitCode::SUCCESS)
}

/// A directory of projects kept in git, and which of the estate's APIs it manages.
struct Directory {
    projects: Vec<Project>,
    /// Names (`*` for any run of characters) of the APIs a prune may delete.
    managed: Vec<String>,
}

/// `apimctl.toml` at a directory's root.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DirectorySettings {
    #[serde(default)]
    managed: Vec<String>,
}

/// The projects of `dir` (each folder holding `Meta-information/`), in name order, with
/// the parameters of the environment applied.
fn read_directory(dir: &Path, params: &BTreeMap<String, Params>) -> anyhow::Result<Directory> {
    let settings_file = dir.join("apimctl.toml");
    let settings: DirectorySettings = match std::fs::read_to_string(&settings_file) {
        Ok(text) => {
            toml::from_str(&text).with_context(|| format!("{}", settings_file.display()))?
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => DirectorySettings::default(),
        Err(err) => return Err(err).with_context(|| format!("{}", settings_file.display())),
    };
    let mut folders: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("{}", dir.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.join("Meta-information").is_dir())
        .collect();
    folders.sort();
    let mut projects = Vec::with_capacity(folders.len());
    for folder in folders {
        let mut project = read_project(&folder)?;
        if let Some(given) = params.get(&project.root) {
            params::apply(&mut project, given)?;
        }
        projects.push(project);
    }
    Ok(Directory {
        projects,
        managed: settings.managed,
    })
}

/// Whether `name` matches `pattern`, where `*` stands for any run of characters.
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, tail)) => name.strip_prefix(head).is_some_and(|rest| {
            (0..=rest.len()).any(|i| rest.is_char_boundary(i) && matches(tail, &rest[i..]))
        }),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Action {
    Create,
    Change,
    Delete,
    Unchanged,
}

/// One API's step of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Step {
    name: String,
    version: String,
    provider: String,
    action: Action,
    /// The API's id in the estate, when it has one.
    id: Option<String>,
    /// The project's folder, for those the directory has.
    project: Option<String>,
    #[serde(default)]
    changes: Vec<ChangeRecord>,
    /// The lifecycle state a creation gives the API (the project's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<String>,
    /// What the plan saw: the estate's API and the directory's project.
    seen_remote: Option<String>,
    seen_local: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ChangeRecord {
    path: String,
    from: Option<Value>,
    to: Option<Value>,
}

impl From<Change> for ChangeRecord {
    fn from(change: Change) -> Self {
        Self {
            path: change.path,
            from: change.from,
            to: change.to,
        }
    }
}

/// A plan as `plan --out` saves it.
#[derive(Debug, Serialize, Deserialize)]
struct SavedPlan {
    environment: String,
    prune: bool,
    steps: Vec<Step>,
}

/// What applying `dir` to the estate would do, step by step.
async fn make_plan(api: &Api, dir: &Directory, prune: bool) -> anyhow::Result<Vec<Step>> {
    let listed = api.list().await?;
    let mut steps = Vec::new();
    let mut ours = Vec::new();
    for project in &dir.projects {
        let who = identity(project)?;
        ours.push(who.clone());
        let ours_compared =
            Compared::of(project).map_err(|why| anyhow::anyhow!("{}: {why}", project.root))?;
        let (name, version, provider) = who.clone();
        let mut step = Step {
            name,
            version,
            provider,
            action: Action::Create,
            id: None,
            project: Some(project.root.clone()),
            changes: Vec::new(),
            status: Some(ours_compared.status().to_string()).filter(|s| !s.is_empty()),
            seen_remote: None,
            seen_local: Some(ours_compared.fingerprint()),
        };
        if let Some(remote) = find(&listed, &who) {
            let exported = Project::from_zip(&api.export(remote).await?)
                .map_err(|refusal| anyhow::anyhow!("{}: {refusal}", remote.name))?;
            let theirs =
                Compared::of(&exported).map_err(|why| anyhow::anyhow!("{}: {why}", remote.name))?;
            let found = ours_compared.changes_from(&theirs);
            step.id = Some(remote.id.clone());
            step.seen_remote = Some(theirs.fingerprint());
            step.status = None;
            step.action = if found.is_empty() {
                Action::Unchanged
            } else {
                Action::Change
            };
            step.changes = found.into_iter().map(ChangeRecord::from).collect();
        }
        steps.push(step);
    }
    if prune {
        for remote in &listed {
            let who = (
                remote.name.clone(),
                remote.version.clone(),
                remote.provider.clone(),
            );
            let managed = dir
                .managed
                .iter()
                .any(|pattern| matches(pattern, &remote.name));
            let is_ours = ours
                .iter()
                .any(|(name, version, _)| *name == who.0 && *version == who.1);
            if !managed || is_ours {
                continue;
            }
            let exported = Project::from_zip(&api.export(remote).await?)
                .map_err(|refusal| anyhow::anyhow!("{}: {refusal}", remote.name))?;
            steps.push(Step {
                name: remote.name.clone(),
                version: remote.version.clone(),
                provider: remote.provider.clone(),
                action: Action::Delete,
                id: Some(remote.id.clone()),
                project: None,
                changes: Vec::new(),
                status: None,
                seen_remote: Some(fingerprint(&exported).map_err(|why| anyhow::anyhow!(why))?),
                seen_local: None,
            });
        }
    }
    Ok(steps)
}

fn counts(steps: &[Step]) -> BTreeMap<&'static str, usize> {
    let mut counts = BTreeMap::from([
        ("create", 0),
        ("change", 0),
        ("delete", 0),
        ("unchanged", 0),
    ]);
    for step in steps {
        let key = match step.action {
            Action::Create => "create",
            Action::Change => "change",
            Action::Delete => "delete",
            Action::Unchanged => "unchanged",
        };
        *counts.entry(key).or_default() += 1;
    }
    counts
}

fn has_changes(steps: &[Step]) -> bool {
    steps.iter().any(|s| s.action != Action::Unchanged)
}

/// The plan as people read it.
fn plan_text(steps: &[Step]) -> String {
    let mut text = String::new();
    for step in steps {
        let (mark, verb) = match step.action {
            Action::Create => ("+", "create"),
            Action::Change => ("~", "change"),
            Action::Delete => ("-", "delete"),
            Action::Unchanged => continue,
        };
        let state = step
            .status
            .as_ref()
            .map(|status| format!(", {status}"))
            .unwrap_or_default();
        text.push_str(&format!(
            "{mark} {verb} {} {} ({}{state})\n",
            step.name, step.version, step.provider
        ));
        for change in &step.changes {
            let shown = |value: &Option<Value>| {
                value
                    .as_ref()
                    .map_or("(none)".to_string(), Value::to_string)
            };
            text.push_str(&format!(
                "    {}: {} -> {}\n",
                change.path,
                shown(&change.from),
                shown(&change.to)
            ));
        }
    }
    if !has_changes(steps) {
        text.push_str("No changes.\n");
        return text;
    }
    let c = counts(steps);
    text.push_str(&format!(
        "Plan: {} to create, {} to change, {} to delete, {} unchanged.\n",
        c["create"], c["change"], c["delete"], c["unchanged"]
    ));
    text
}

/// The environment, its parameters and the directory with them applied.
async fn open(
    folder: &Folder,
    estate: &cli::Estate,
) -> anyhow::Result<(Api, BTreeMap<String, Params>, Directory)> {
    let api = Api::connect(folder, &estate.env).await?;
    let params = params::load(estate.params.as_deref(), &estate.env)?;
    let dir = read_directory(&estate.dir, &params)?;
    Ok((api, params, dir))
}

/// `plan`: changes nothing; exit 0 when there is nothing to do, 2 when there is.
pub async fn plan(folder: &Folder, plan: cli::Plan, output: &Output) -> anyhow::Result<ExitCode> {
    let (api, _, dir) = open(folder, &plan.estate).await?;
    let steps = make_plan(&api, &dir, plan.estate.prune).await?;
    let saved = SavedPlan {
        environment: plan.estate.env.clone(),
        prune: plan.estate.prune,
        steps,
    };
    if let Some(out) = &plan.out {
        std::fs::write(out, serde_json::to_vec_pretty(&saved)?)
            .with_context(|| format!("{}", out.display()))?;
    }
    let value = json!({"environment": saved.environment, "steps": saved.steps, "summary": counts(&saved.steps)});
    output.document(&plan_text(&saved.steps), &value);
    Ok(if has_changes(&saved.steps) {
        ExitCode::from(CHANGES)
    } else {
        ExitCode::SUCCESS
    })
}

/// `apply`: the plan made now, or exactly the saved one (refused when what it saw moved).
pub async fn apply(
    folder: &Folder,
    apply: cli::Apply,
    output: &Output,
) -> anyhow::Result<ExitCode> {
    let (api, params, dir) = open(folder, &apply.estate).await?;
    let saved = match &apply.plan {
        Some(file) => {
            let text = std::fs::read(file).with_context(|| format!("{}", file.display()))?;
            Some(
                serde_json::from_slice::<SavedPlan>(&text)
                    .with_context(|| format!("{}", file.display()))?,
            )
        }
        None => None,
    };
    if let Some(saved) = &saved
        && saved.environment != apply.estate.env
    {
        bail!(
            "The plan is for {}, not {}",
            saved.environment,
            apply.estate.env
        );
    }
    let prune = saved.as_ref().map_or(apply.estate.prune, |s| s.prune);
    let steps = make_plan(&api, &dir, prune).await?;
    if let Some(moved) = saved.as_ref().and_then(|s| first_moved(&s.steps, &steps)) {
        bail!("The estate or the directory moved since the plan was made ({moved}): plan again");
    }
    let todo: Vec<&Step> = steps
        .iter()
        .filter(|s| s.action != Action::Unchanged)
        .collect();
    let bar = output.progress(todo.len());
    for step in &todo {
        bar.set_message(format!("{} {}", step.name, step.version));
        apply_step(&api, &dir, &params, step).await?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let c = counts(&steps);
    let said = if todo.is_empty() {
        "No changes.".to_string()
    } else {
        format!(
            "Applied: {} created, {} changed, {} deleted.",
            c["create"], c["change"], c["delete"]
        )
    };
    output.document(
        &format!("{said}\n"),
        &json!({"applied": todo, "summary": c}),
    );
    Ok(ExitCode::SUCCESS)
}

/// The first step where what a plan saw differs from what is there now.
fn first_moved(planned: &[Step], now: &[Step]) -> Option<String> {
    if planned.len() != now.len() {
        return Some(format!(
            "{} steps planned, {} now",
            planned.len(),
            now.len()
        ));
    }
    planned.iter().zip(now).find_map(|(a, b)| {
        let same = a.name == b.name
            && a.version == b.version
            && a.provider == b.provider
            && a.action == b.action
            && a.seen_remote == b.seen_remote
            && a.seen_local == b.seen_local;
        (!same).then(|| format!("{} {}", a.name, a.version))
    })
}

async fn apply_step(
    api: &Api,
    dir: &Directory,
    params: &BTreeMap<String, Params>,
    step: &Step,
) -> anyhow::Result<()> {
    let project = || {
        dir.projects
            .iter()
            .find(|p| Some(&p.root) == step.project.as_ref())
            .context("the plan names a project the directory does not have")
    };
    let id = match (step.action, &step.id) {
        (Action::Create, _) => api.import(zip_of(project()?)?, true).await?.0,
        (Action::Change, Some(id)) => api.update(id, zip_of(project()?)?, true).await?.0,
        (Action::Delete, Some(id)) => {
            api.delete(id).await?;
            return Ok(());
        }
        _ => return Ok(()),
    };
    let given = step.project.as_ref().and_then(|root| params.get(root));
    if let Some(password) = given.map(params::backend_password).transpose()?.flatten() {
        api.set_backend_password(&id, &password).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn managed_names_match_with_stars() {
        assert!(matches("Pets", "Pets"));
        assert!(!matches("Pets", "Pets2"));
        assert!(matches("Orders*", "Orders"));
        assert!(matches("Orders*", "OrdersV2"));
        assert!(matches("*-internal", "billing-internal"));
        assert!(!matches("*-internal", "billing"));
        assert!(matches("*", "anything"));
    }
}
