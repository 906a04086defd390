//! Operator actions for fax lines (`agentic-api admin ...`): a seller
//! account's customers and their fax rollout, the customers a line serves,
//! which users act for which customer, and faxes whose submission outcome
//! is unknown. Every input is checked before anything is written.

use chrono::Utc;
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set,
};
use serde_json::{Value, json};

use entity::{
    account, customer_access, fax, fax_agent, inbound_fax, phone_line, phone_line_customer,
    seller_customer, user,
};

use super::service::{FAILED, QUEUED, SUBMITTING, UNRESOLVED};
use crate::auth::tenancy::TenancyError;

fn invalid<T>(m: impl Into<String>) -> Result<T, TenancyError> {
    Err(TenancyError::Invalid(m.into()))
}

async fn customer(
    db: &DatabaseConnection,
    id: i64,
) -> Result<seller_customer::Model, TenancyError> {
    match seller_customer::Entity::find_by_id(id).one(db).await? {
        Some(c) => Ok(c),
        None => invalid(format!("unknown customer {id}")),
    }
}

/// A customer of a seller account (`admin create-customer`).
pub async fn create_customer(
    db: &DatabaseConnection,
    account_id: &str,
    name: &str,
    fax_enabled: bool,
) -> Result<Value, TenancyError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 255 {
        return invalid("--name must be 1 to 255 characters");
    }
    if account::Entity::find_by_id(account_id.to_string())
        .one(db)
        .await?
        .is_none()
    {
        return invalid(format!("unknown account '{account_id}'"));
    }
    let row = seller_customer::ActiveModel {
        account_id: Set(account_id.to_string()),
        name: Set(name.to_string()),
        fax_enabled: Set(fax_enabled),
        created_at: Set(Utc::now()),
        ..Default::default()
    }
    .insert(db)
    .await
    .map_err(|e| match e.sql_err() {
        Some(sea_orm::SqlErr::UniqueConstraintViolation(_)) => {
            TenancyError::Invalid(format!("the account already has a customer named '{name}'"))
        }
        _ => e.into(),
    })?;
    Ok(json!({ "customerId": row.id, "faxEnabled": fax_enabled }))
}

/// Turns the fax rollout on or off for a customer (`admin set-fax-rollout`).
pub async fn set_fax_rollout(
    db: &DatabaseConnection,
    customer_id: i64,
    enabled: bool,
) -> Result<Value, TenancyError> {
    customer(db, customer_id).await?;
    seller_customer::Entity::update_many()
        .col_expr(seller_customer::Column::FaxEnabled, Expr::value(enabled))
        .filter(seller_customer::Column::Id.eq(customer_id))
        .exec(db)
        .await?;
    Ok(json!({ "customerId": customer_id, "faxEnabled": enabled }))
}

/// A fax line serves a customer of its account, active or not
/// (`admin assign-line-customer`).
pub async fn assign_line(
    db: &DatabaseConnection,
    line_id: &str,
    customer_id: i64,
    active: bool,
) -> Result<Value, TenancyError> {
    let Some(line) = (match line_id.parse::<i64>() {
        Ok(id) => phone_line::Entity::find_by_id(id).one(db).await?,
        Err(_) => None,
    }) else {
        return invalid(format!("unknown line '{line_id}'"));
    };
    if line.kind != "fax" {
        return invalid(format!(
            "line {} is a {} line, not a fax line",
            line.id, line.kind
        ));
    }
    let c = customer(db, customer_id).await?;
    if c.account_id != line.account_id {
        return invalid("the line and the customer belong to different accounts");
    }
    phone_line_customer::Entity::insert(phone_line_customer::ActiveModel {
        line_id: Set(line.id),
        customer_id: Set(customer_id),
        active: Set(active),
        created_at: Set(Utc::now()),
    })
    .on_conflict(
        OnConflict::columns([
            phone_line_customer::Column::LineId,
            phone_line_customer::Column::CustomerId,
        ])
        .update_column(phone_line_customer::Column::Active)
        .to_owned(),
    )
    .exec(db)
    .await?;
    Ok(json!({ "endpointId": line.id.to_string(), "customerId": customer_id, "active": active }))
}

/// A user of the customer's account may act for it, with any of their keys
/// (`admin grant-customer-access`), or no longer (`revoke`).
pub async fn customer_access(
    db: &DatabaseConnection,
    customer_id: i64,
    user_id: i64,
    grant: bool,
) -> Result<Value, TenancyError> {
    let c = customer(db, customer_id).await?;
    let Some(u) = user::Entity::find_by_id(user_id).one(db).await? else {
        return invalid(format!("unknown user {user_id}"));
    };
    if u.account_id != c.account_id {
        return invalid("the user and the customer belong to different accounts");
    }
    if grant {
        customer_access::Entity::insert(customer_access::ActiveModel {
            customer_id: Set(customer_id),
            user_id: Set(user_id),
            created_at: Set(Utc::now()),
        })
        .on_conflict(
            OnConflict::columns([
                customer_access::Column::CustomerId,
                customer_access::Column::UserId,
            ])
            .do_nothing()
            .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    } else {
        customer_access::Entity::delete_by_id((customer_id, user_id))
            .exec(db)
            .await?;
    }
    Ok(json!({ "customerId": customer_id, "userId": user_id, "access": grant }))
}

fn fax_json(f: &fax::Model) -> Value {
    json!({
        "faxId": f.id,
        "accountId": f.account_id,
        "customerId": f.customer_id,
        "endpointId": f.line_id.to_string(),
        "requestId": f.request_id,
        "to": f.to_number,
        "mediaSha256": f.media_sha256,
        "providerFaxId": f.provider_fax_id,
        "status": f.status,
        "reason": f.failure_reason,
        "createdAt": f.created_at,
        "updatedAt": f.updated_at,
    })
}

/// Faxes, newest first: all (the latest 100), or only those whose outcome
/// is unknown (`unresolved`, and `submitting` ones older than a minute: the
/// process stopped before it recorded the outcome), or only failed ones.
pub async fn list_faxes(
    db: &DatabaseConnection,
    unresolved: bool,
    failed: bool,
) -> Result<Value, TenancyError> {
    let mut q = fax::Entity::find();
    if unresolved {
        let stale = Utc::now() - chrono::Duration::minutes(1);
        q = q.filter(
            sea_orm::Condition::any()
                .add(fax::Column::Status.eq(UNRESOLVED))
                .add(
                    sea_orm::Condition::all()
                        .add(fax::Column::Status.eq(SUBMITTING))
                        .add(fax::Column::UpdatedAt.lt(stale)),
                ),
        );
    } else if failed {
        q = q.filter(fax::Column::Status.eq(FAILED));
    }
    let rows = q.order_by_desc(fax::Column::Id).limit(100).all(db).await?;
    let mut inbound_q = inbound_fax::Entity::find();
    if unresolved || failed {
        inbound_q = inbound_q.filter(inbound_fax::Column::Stage.eq("failed"));
    }
    let inbound = inbound_q
        .order_by_desc(inbound_fax::Column::Id)
        .limit(100)
        .all(db)
        .await?;
    Ok(json!({
        "faxes": rows.iter().map(fax_json).collect::<Vec<_>>(),
        "inbound": inbound.iter().map(inbound_json).collect::<Vec<_>>(),
    }))
}

/// A received fax and the pipeline's state for it (never its text or
/// files: those are the customer's).
fn inbound_json(f: &inbound_fax::Model) -> Value {
    json!({
        "inboundFaxId": f.id,
        "accountId": f.account_id,
        "customerId": f.customer_id,
        "endpointId": f.line_id.to_string(),
        "providerFaxId": f.provider_fax_id,
        "from": f.from_number,
        "stage": f.stage,
        "failure": f.failure,
        "pages": f.pages,
        "bytes": f.file_bytes,
        "truncated": f.truncated,
        "attempts": f.attempts,
        "replyFaxId": f.reply_fax_id,
        "leaseOwner": f.lease_owner,
        "createdAt": f.created_at,
        "updatedAt": f.updated_at,
    })
}

/// Assigns a fax line's storefront agent (`admin assign-fax-agent`): its
/// instructions, and the read operations it may call as `tool_user`
/// (read-only). Write operations are refused: a storefront agent has no
/// buyer write tools.
pub async fn assign_agent(
    db: &DatabaseConnection,
    registry: crate::ops::Registry,
    line_id: &str,
    instructions: &str,
    tools: &[String],
    tool_user: Option<i64>,
) -> Result<Value, TenancyError> {
    let Some(line) = (match line_id.parse::<i64>() {
        Ok(id) => phone_line::Entity::find_by_id(id).one(db).await?,
        Err(_) => None,
    }) else {
        return invalid(format!("unknown line '{line_id}'"));
    };
    if line.kind != "fax" {
        return invalid(format!("line {} is not a fax line", line.id));
    }
    if instructions.chars().count() > 8_000 {
        return invalid("--instructions must be at most 8,000 characters");
    }
    for t in tools {
        match registry.find(t) {
            None => return invalid(format!("unknown operation '{t}'")),
            Some(d) if d.access != crate::ops::Access::Read => {
                return invalid(format!("'{t}' writes; a storefront agent may only read"));
            }
            Some(_) => {}
        }
    }
    if !tools.is_empty() {
        let Some(uid) = tool_user else {
            return invalid("--tool needs --tool-user, the user the agent reads as");
        };
        match user::Entity::find_by_id(uid).one(db).await? {
            Some(u) if u.account_id == line.account_id => {}
            _ => return invalid(format!("user {uid} is not a user of the line's account")),
        }
    }
    fax_agent::Entity::insert(fax_agent::ActiveModel {
        line_id: Set(line.id),
        instructions: Set(instructions.trim().to_string()),
        tools: Set(tools.join(" ")),
        tool_user_id: Set(tool_user),
        updated_at: Set(Utc::now()),
    })
    .on_conflict(
        OnConflict::column(fax_agent::Column::LineId)
            .update_columns([
                fax_agent::Column::Instructions,
                fax_agent::Column::Tools,
                fax_agent::Column::ToolUserId,
                fax_agent::Column::UpdatedAt,
            ])
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    Ok(json!({ "endpointId": line.id.to_string(), "tools": tools, "toolUserId": tool_user }))
}

/// A line named by its id or its number.
#[derive(Debug, Clone)]
pub enum LineRef {
    Id(String),
    Number(String),
}

impl LineRef {
    pub fn from_args(endpoint: Option<String>, number: Option<String>) -> Self {
        match (endpoint, number) {
            (Some(id), _) => LineRef::Id(id),
            (None, n) => LineRef::Number(n.unwrap_or_default()),
        }
    }
}

/// Receives a sample fax on a line as the simulated carrier would deliver
/// it (`admin receive-sample-fax`): the PDF (a sample request for proposal
/// unless given) is stored for the line's customer and recorded `stored`,
/// for a running server's pipeline to answer. For demos and trials.
pub async fn receive_sample(
    db: &DatabaseConnection,
    config: &crate::config::Config,
    line_ref: LineRef,
    from: &str,
    pdf_bytes: Option<Vec<u8>>,
) -> Result<Value, TenancyError> {
    let found = match &line_ref {
        LineRef::Id(id) => match id.parse::<i64>() {
            Ok(id) => phone_line::Entity::find_by_id(id).one(db).await?,
            Err(_) => None,
        },
        LineRef::Number(n) => {
            phone_line::Entity::find()
                .filter(phone_line::Column::Number.eq(n.trim()))
                .one(db)
                .await?
        }
    };
    let Some(line) = found else {
        return invalid(format!("unknown line {line_ref:?}"));
    };
    if line.kind != "fax" || !line.active {
        return invalid(format!("line {} is not an active fax line", line.id));
    }
    let from = crate::types::E164::parse(from).map_err(TenancyError::Invalid)?;
    let served: Vec<i64> = phone_line_customer::Entity::find()
        .filter(phone_line_customer::Column::LineId.eq(line.id))
        .filter(phone_line_customer::Column::Active.eq(true))
        .all(db)
        .await?
        .into_iter()
        .map(|s| s.customer_id)
        .collect();
    let Some(customer) = seller_customer::Entity::find()
        .filter(seller_customer::Column::Id.is_in(served))
        .filter(seller_customer::Column::FaxEnabled.eq(true))
        .order_by_asc(seller_customer::Column::Id)
        .one(db)
        .await?
    else {
        return invalid(format!(
            "line {} serves no customer with faxes enabled (assign-line-customer, set-fax-rollout)",
            line.id
        ));
    };
    let bytes = match pdf_bytes {
        Some(b) => b,
        None => super::pdf::render_text(
            "Request for proposal",
            "To the sales team,\n\nWe plan a spring campaign for our running shoes in New York and \
             Chicago, from 1 March to 30 April, with a budget of 40,000 USD. Please send your \
             rates for connected TV and sports video, and your availability.\n\nBest regards,\n\
             The Acme Sports marketing team",
        )
        .map_err(|e| TenancyError::Invalid(e.to_string()))?,
    };
    super::pdf::validate_within(
        &bytes,
        usize::try_from(config.fax_max_mb * 1024 * 1024).unwrap_or(usize::MAX),
    )
    .map_err(|e| TenancyError::Invalid(format!("the sample is refused: {e}")))?;
    let storage = super::storage::Storage::new(config.fax_storage_dir.clone());
    let name = format!("{}.pdf", uuid::Uuid::new_v4().simple());
    let rel = storage
        .put(&line.account_id, customer.id, &name, &bytes)
        .await
        .map_err(|e| TenancyError::Invalid(format!("cannot store the sample: {e}")))?;
    let now = Utc::now();
    let row = inbound_fax::ActiveModel {
        account_id: Set(line.account_id.clone()),
        customer_id: Set(customer.id),
        line_id: Set(line.id),
        provider_fax_id: Set(format!("sample-{}", uuid::Uuid::new_v4())),
        from_number: Set(from.as_str().to_string()),
        to_number: Set(line.number.clone()),
        stage: Set("stored".into()),
        file_path: Set(Some(rel)),
        file_bytes: Set(i64::try_from(bytes.len()).unwrap_or(i64::MAX)),
        created_at: Set(now),
        updated_at: Set(now),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok(json!({ "inboundFaxId": row.id, "endpointId": line.id.to_string(), "stage": "stored" }))
}

/// Resolves a fax whose outcome was unknown: `sent` (the operator found the
/// carrier took it, with its fax id: the request id then returns it) or
/// `failed` (it was not sent: the request id may send it anew).
pub async fn resolve_fax(
    db: &DatabaseConnection,
    fax_id: i64,
    sent: bool,
    provider_fax_id: Option<String>,
) -> Result<Value, TenancyError> {
    let Some(f) = fax::Entity::find_by_id(fax_id).one(db).await? else {
        return invalid(format!("unknown fax {fax_id}"));
    };
    if f.status != UNRESOLVED && f.status != SUBMITTING {
        return invalid(format!(
            "fax {fax_id} is {}, not unresolved: nothing to resolve",
            f.status
        ));
    }
    let provider = match (sent, provider_fax_id) {
        (true, Some(id)) if uuid::Uuid::parse_str(id.trim()).is_ok() => Some(id.trim().to_string()),
        (true, _) => {
            return invalid("--sent needs --provider-fax-id, the carrier's fax id (a UUID)");
        }
        (false, _) => None,
    };
    let (status, reason) = if sent {
        (QUEUED, None)
    } else {
        (
            FAILED,
            Some("resolved as not sent by an operator".to_string()),
        )
    };
    let res = fax::Entity::update_many()
        .col_expr(fax::Column::Status, Expr::value(status))
        .col_expr(fax::Column::ProviderFaxId, Expr::value(provider.clone()))
        .col_expr(fax::Column::FailureReason, Expr::value(reason))
        .col_expr(fax::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(fax::Column::Id.eq(fax_id))
        .filter(fax::Column::Status.eq(f.status.as_str()))
        .exec(db)
        .await?;
    if res.rows_affected != 1 {
        return invalid(format!("fax {fax_id} changed meanwhile; list it again"));
    }
    Ok(json!({ "faxId": fax_id, "status": status, "providerFaxId": provider }))
}
