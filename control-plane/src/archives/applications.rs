//! Applications as WSO2 2.6's admin API exports and imports them
//! (`FileBasedApplicationImportExportManager`): a zip holding `<Name>/<Name>.json`, Gson
//! of WSO2's `Application` model (its owner, tier, callback, attributes, token type and
//! the APIs it is subscribed to, each by provider, name and version with its tier), never
//! its keys. An import creates the application for its owner and its subscriptions to
//! the APIs that are there, published and offer the tier, in one transaction; the others
//! are skipped and named.

use apim_archive::{ApiIdentifier, Project, provider_in_project};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::export::file_name_of;
use crate::applications::{APPROVED, CREATED, NewApplication, StoredApplication};
use crate::error::{Error, OnDuplicate, Result};
use crate::manifest::{Touched, Touches};
use crate::state::AppState;
use crate::subscriptions::{BLOCKED, ON_HOLD, PROD_ONLY_BLOCKED, UNBLOCKED};
use crate::tiers::TierLevel;
use crate::users::{User, provider_key, tenant_of};
use crate::workflows::Kind;

/// WSO2's `Subscriber`, as its model names an application's owner.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SubscriberJson {
    pub name: String,
}

/// A tier as WSO2's model names it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TierJson {
    pub name: String,
}

/// One of the application's subscriptions in WSO2's model (`SubscribedAPI`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribedApiJson {
    pub api_id: ApiIdentifier,
    pub tier: Option<TierJson>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_status: Option<String>,
}

/// `<Name>/<Name>.json`: WSO2's `Application`, the members this platform has (others,
/// such as its numeric `id` or `isBlackListed`, are read and ignored).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationJson {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub tier: Option<String>,
    #[serde(default)]
    pub callback_url: Option<String>,
    #[serde(default)]
    pub subscriber: Option<SubscriberJson>,
    #[serde(default, rename = "subscribedAPIs")]
    pub subscribed_apis: Vec<SubscribedApiJson>,
    /// Never exported: keys are each environment's own.
    #[serde(default)]
    pub keys: Vec<Value>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub group_id: Option<String>,
    #[serde(default)]
    pub owner: Option<String>,
    #[serde(default)]
    pub token_type: Option<String>,
    #[serde(default)]
    pub application_attributes: Map<String, Value>,
}

/// The project of `app`: its model, with the APIs it is subscribed to.
pub async fn project_of(state: &AppState, app: &StoredApplication) -> Result<Project> {
    let mut subscribed = Vec::new();
    for subscription in crate::subscriptions::of_application(&state.db, &app.id).await? {
        let Some(api) = crate::apis::find(&state.db, &subscription.api_id).await? else {
            continue;
        };
        subscribed.push(SubscribedApiJson {
            api_id: ApiIdentifier {
                provider_name: provider_in_project(&api.provider),
                api_name: api.name,
                version: api.version,
            },
            tier: Some(TierJson {
                name: subscription.tier,
            }),
            sub_status: Some(subscription.status),
        });
    }
    let attributes = serde_json::from_str(&app.attributes).unwrap_or_default();
    let model = ApplicationJson {
        name: app.name.clone(),
        uuid: Some(app.id.clone()),
        description: Some(app.description.clone()),
        tier: Some(app.throttling_tier.clone()),
        callback_url: Some(app.callback_url.clone()),
        subscriber: Some(SubscriberJson {
            name: app.owner.clone(),
        }),
        subscribed_apis: subscribed,
        keys: Vec::new(),
        status: Some(app.status.clone()),
        group_id: Some(app.group_id.clone()),
        owner: Some(app.owner.clone()),
        token_type: Some(app.token_type.clone()),
        application_attributes: attributes,
    };
    // What could leave its folder made `_`; the model keeps the name as it is.
    let folder = file_name_of(&app.name);
    let mut project = Project::new(&folder);
    let json = serde_json::to_vec(&model).map_err(anyhow::Error::from)?;
    project.add(&format!("{folder}.json"), json);
    Ok(project)
}

/// The application's model in a project: `<root>.json`, else its one JSON file.
pub fn model_in(project: &Project) -> Result<ApplicationJson> {
    let own = format!("{}.json", project.root);
    let json: Vec<(&String, &Vec<u8>)> = project
        .files
        .iter()
        .filter(|(path, _)| path.ends_with(".json"))
        .collect();
    let bytes = match project.file(&own) {
        Some(bytes) => bytes,
        None => match json.as_slice() {
            [(_, bytes)] => bytes.as_slice(),
            _ => {
                return Err(Error::Invalid(format!(
                    "The archive has no {own} with the application"
                )));
            }
        },
    };
    serde_json::from_slice(bytes)
        .map_err(|why| Error::Invalid(format!("The application cannot be read: {why}")))
}

/// How an application is imported (`import/applications`' query).
#[derive(Debug, Default)]
pub struct ImportOptions {
    /// The owner the model names, rather than the importer.
    pub preserve_owner: bool,
    /// No subscriptions.
    pub skip_subscriptions: bool,
    /// This owner, whatever else says.
    pub app_owner: Option<String>,
}

/// What an import made: the application, and the APIs whose subscriptions were skipped.
pub struct ImportedApplication {
    pub application: StoredApplication,
    pub skipped: Vec<ApiIdentifier>,
    pub touches: Touches,
}

/// The owner of an imported application: `appOwner`, else the model's owner with
/// `preserveOwner`, else the importer; one of the importer's tenant, and a user.
async fn owner_of(
    state: &AppState,
    importer: &User,
    model: &ApplicationJson,
    options: &ImportOptions,
) -> Result<User> {
    let named = model
        .owner
        .clone()
        .or_else(|| model.subscriber.as_ref().map(|s| s.name.clone()));
    let owner = match (&options.app_owner, options.preserve_owner) {
        (Some(owner), _) if !owner.trim().is_empty() => owner.clone(),
        (_, true) => named.unwrap_or_else(|| importer.username.clone()),
        _ => importer.username.clone(),
    };
    if tenant_of(&owner) != importer.tenant {
        return Err(Error::Forbidden(
            "Cross Tenant Imports are not allowed".into(),
        ));
    }
    crate::users::find(&state.db, &owner)
        .await?
        .ok_or_else(|| Error::Invalid("Provided Application Owner is Invalid".into()))
}

/// Imports the application of `project` for the owner `options` say.
pub async fn import_application(
    state: &AppState,
    importer: &User,
    project: &Project,
    options: &ImportOptions,
) -> Result<ImportedApplication> {
    let model = model_in(project)?;
    let owner_user = owner_of(state, importer, &model, options).await?;
    let owner = owner_user.username.clone();
    let tier = model
        .tier
        .clone()
        .unwrap_or_else(|| crate::tiers::UNLIMITED.to_string());
    let tenant = tenant_of(&owner).to_string();
    let unknown =
        crate::tiers::unknown(&state.db, &tenant, TierLevel::Application, [tier.as_str()]).await?;
    let permitted = crate::tiers::Permissions::of(&state.db, &tenant, TierLevel::Application)
        .await?
        .allows(&tier, Some(&owner_user.roles));
    if !unknown.is_empty() || !permitted {
        return Err(Error::Invalid(format!("Specified tier {tier} is invalid")));
    }
    let name = model.name.clone();
    if name.is_empty() {
        return Err(Error::Invalid("The application has no name".into()));
    }
    crate::applications::check_name(&name)?;
    let token_type = model.token_type.clone().unwrap_or_else(|| "OAUTH".into());
    crate::applications::check_token_type(&token_type)?;
    let app_waits =
        crate::workflows::required(&state.db, &tenant, Kind::ApplicationCreation).await?;
    let subscription_waits =
        crate::workflows::required(&state.db, &tenant, Kind::SubscriptionCreation).await?;
    let id = uuid::Uuid::new_v4().to_string();
    let attributes = Value::Object(model.application_attributes.clone()).to_string();
    let status = if app_waits { CREATED } else { APPROVED };
    // Read before the transaction, which holds the one writer SQLite has. An application
    // waiting for its approval may not subscribe yet (as in the store): all are skipped.
    let mut taken = Vec::new();
    let mut skipped = Vec::new();
    if !options.skip_subscriptions {
        let tiers =
            crate::tiers::Permissions::of(&state.db, &tenant, TierLevel::Subscription).await?;
        for subscribed in &model.subscribed_apis {
            match subscribable(state, &tenant, subscribed).await? {
                // The owner's roles must allow the tier, as the store asks of them.
                Some(found) if !app_waits && tiers.allows(&found.1, Some(&owner_user.roles)) => {
                    taken.push(found)
                }
                _ => skipped.push(subscribed.api_id.clone()),
            }
        }
    }
    let mut tx = state.db.begin().await?;
    crate::applications::insert_application(
        &mut *tx,
        NewApplication {
            id: &id,
            owner: &owner,
            name: &name,
            tier: &tier,
            description: model.description.clone().unwrap_or_default(),
            callback_url: model.callback_url.clone().unwrap_or_default(),
            group_id: model.group_id.clone().unwrap_or_default(),
            token_type,
            attributes,
            status,
        },
    )
    .await
    .on_duplicate(|| format!("An application with name {name} already exists for {owner}"))?;
    if app_waits {
        crate::workflows::open(&mut *tx, &tenant, Kind::ApplicationCreation, &id, "{}").await?;
    }
    let mut touched = vec![Touched::Application(id.clone())];
    for (api_id, tier, blocked) in taken {
        let subscription = uuid::Uuid::new_v4().to_string();
        let status = match blocked {
            Some(block) => block,
            None if subscription_waits => ON_HOLD,
            None => UNBLOCKED,
        };
        crate::subscriptions::insert_subscription(
            &mut *tx,
            &subscription,
            &id,
            &api_id,
            &tier,
            status,
        )
        .await
        .on_duplicate(|| "The application lists one API twice".to_string())?;
        if subscription_waits && blocked.is_none() {
            let kind = Kind::SubscriptionCreation;
            crate::workflows::open(&mut *tx, &tenant, kind, &subscription, "{}").await?;
        }
        touched.push(Touched::Subscription {
            application: id.clone(),
            api: api_id,
        });
    }
    tx.commit().await?;
    tracing::info!(application = %id, %owner, skipped = skipped.len(), "application imported");
    let application = crate::applications::find(&state.db, &id)
        .await?
        .ok_or_else(|| Error::NotFound("application", id.clone()))?;
    Ok(ImportedApplication {
        application,
        skipped,
        touches: Touches(touched),
    })
}

/// The API a subscription of the model is to, its tier and the publisher's block it
/// carries, when it may be taken as WSO2 takes it: the API is here, of the owner's
/// tenant, PUBLISHED, and offers the tier.
async fn subscribable(
    state: &AppState,
    tenant: &str,
    subscribed: &SubscribedApiJson,
) -> Result<Option<(String, String, Option<&'static str>)>> {
    let id = &subscribed.api_id;
    let provider = id.provider_name.replace("-AT-", "@");
    let unique = format!("{}-{}-{}", provider_key(&provider), id.api_name, id.version);
    let Some(api) = crate::apis::find(&state.db, &unique).await? else {
        return Ok(None);
    };
    let Some(tier) = subscribed.tier.as_ref().map(|t| t.name.clone()) else {
        return Ok(None);
    };
    let offered = api.record.tiers.clone().unwrap_or_default();
    if api.tenant != tenant || api.status != "PUBLISHED" || !offered.contains(&tier) {
        return Ok(None);
    }
    // A block the publisher set holds on the copy.
    let blocked = match subscribed.sub_status.as_deref() {
        Some(BLOCKED) => Some(BLOCKED),
        Some(PROD_ONLY_BLOCKED) => Some(PROD_ONLY_BLOCKED),
        _ => None,
    };
    Ok(Some((api.id, tier, blocked)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wso2s_model_of_an_application_is_read() {
        let exported = serde_json::json!({
            "id": 3, "name": "Mobile", "uuid": "u", "tier": "Unlimited",
            "callbackUrl": "", "subscriber": {"name": "ann", "id": 2},
            "subscribedAPIs": [{"subscriber": {"name": "ann"},
                "apiId": {"providerName": "admin", "apiName": "Pets", "version": "1.0.0"},
                "tier": {"name": "Gold", "requestsPerMin": 5000}, "subStatus": "UNBLOCKED"}],
            "keys": [], "status": "APPROVED", "groupId": "", "owner": "ann",
            "tokenType": "OAUTH", "applicationAttributes": {"team": "mobile"},
            "isBlackListed": false
        });
        let mut project = Project::new("Mobile");
        project.add("Mobile.json", exported.to_string().into_bytes());
        let model = model_in(&project).unwrap();
        assert_eq!(model.name, "Mobile");
        assert_eq!(model.subscribed_apis[0].api_id.api_name, "Pets");
        assert_eq!(model.subscribed_apis[0].tier.as_ref().unwrap().name, "Gold");
        assert_eq!(model.application_attributes["team"], "mobile");
        let nothing = Project::new("Empty");
        assert!(model_in(&nothing).is_err());
    }
}
