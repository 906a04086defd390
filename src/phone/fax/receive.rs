//! The pipeline's first stage, in the carrier's signed `fax.received`
//! event (verified before anything is parsed, like every carrier event):
//! the PDF is copied from the carrier's temporary URL into the customer's
//! private storage and the fax recorded as `stored`. The URL is used once,
//! here, and never stored or shown to the agent: a fetch that fails for a
//! passing reason answers 503 so that the carrier sends the event again,
//! which is how a crash during the copy resumes. A file that is too large
//! or not a PDF is recorded as failed.

use chrono::Utc;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};

use entity::{inbound_fax, phone_line, phone_line_customer, seller_customer};

use super::storage::Storage;
use crate::net::{NetError, Outbound, read_body};
use crate::ops::Ctx;
use crate::types::{E164, OutboundUrl};

/// What stage 1 needs (a domain handle).
#[derive(Clone)]
pub struct Receiving {
    pub outbound: Outbound,
    pub storage: Storage,
    pub max_bytes: usize,
}

/// Records a received fax; `Err` (503 to the carrier) only when trying
/// again can help.
pub async fn receive(
    ctx: &Ctx,
    fax_id: &str,
    from: &str,
    to: &str,
    media_url: String,
) -> Result<(), String> {
    let db = &ctx.db;
    let dberr = |e: sea_orm::DbErr| e.to_string();
    let Some(line) = phone_line::Entity::find()
        .filter(phone_line::Column::Number.eq(to))
        .filter(phone_line::Column::Kind.eq("fax"))
        .filter(phone_line::Column::Active.eq(true))
        .one(db)
        .await
        .map_err(dberr)?
    else {
        tracing::info!(%to, "fax received for no active fax line; dropped");
        return Ok(());
    };
    if inbound_fax::Entity::find()
        .filter(inbound_fax::Column::ProviderFaxId.eq(fax_id))
        .one(db)
        .await
        .map_err(dberr)?
        .is_some()
    {
        return Ok(()); // the carrier repeated the event
    }
    // The line's first active customer with the rollout owns the fax.
    let served: Vec<i64> = phone_line_customer::Entity::find()
        .filter(phone_line_customer::Column::LineId.eq(line.id))
        .filter(phone_line_customer::Column::Active.eq(true))
        .all(db)
        .await
        .map_err(dberr)?
        .into_iter()
        .map(|s| s.customer_id)
        .collect();
    let Some(customer) = seller_customer::Entity::find()
        .filter(seller_customer::Column::Id.is_in(served))
        .filter(seller_customer::Column::AccountId.eq(line.account_id.as_str()))
        .filter(seller_customer::Column::FaxEnabled.eq(true))
        .order_by_asc(seller_customer::Column::Id)
        .one(db)
        .await
        .map_err(dberr)?
    else {
        tracing::info!(
            line = line.id,
            "fax received on a line with no customer enabled for faxes; dropped"
        );
        return Ok(());
    };
    let receiving = ctx.get::<Receiving>().map_err(|e| e.to_string())?.clone();
    let now = Utc::now();
    let mut row = inbound_fax::ActiveModel {
        account_id: Set(line.account_id.clone()),
        customer_id: Set(customer.id),
        line_id: Set(line.id),
        provider_fax_id: Set(fax_id.to_string()),
        from_number: Set(from.to_string()),
        to_number: Set(line.number.clone()),
        stage: Set("stored".into()),
        failure: Set(None),
        file_path: Set(None),
        file_bytes: Set(0),
        pages: Set(0),
        extracted_text: Set(None),
        truncated: Set(false),
        reply_text: Set(None),
        reply_path: Set(None),
        reply_token: Set(None),
        reply_fax_id: Set(None),
        attempts: Set(0),
        lease_owner: Set(None),
        lease_until: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
        ..Default::default()
    };
    // Only a verified originating number gets a reply.
    if E164::parse(from).is_err() {
        row.stage = Set("failed".into());
        row.failure = Set(Some(
            "the originating number is not a valid E.164 number".into(),
        ));
        return insert(db, None, row).await;
    }
    match fetch(&receiving, &media_url, ctx.config.url_policy()).await {
        Fetched::Bytes(bytes) => {
            let name = format!("{}.pdf", uuid::Uuid::new_v4().simple());
            let rel = receiving
                .storage
                .put(&line.account_id, customer.id, &name, &bytes)
                .await
                .map_err(|e| format!("cannot store a received fax: {e}"))?;
            row.file_path = Set(Some(rel));
            row.file_bytes = Set(i64::try_from(bytes.len()).unwrap_or(i64::MAX));
        }
        Fetched::Refused(why) => {
            row.stage = Set("failed".into());
            row.failure = Set(Some(why));
        }
        Fetched::Retry(why) => return Err(format!("cannot fetch a received fax: {why}")),
    }
    crate::metrics::fax_stage(
        "stored",
        if row.stage.as_ref() == "failed" {
            "failed"
        } else {
            "ok"
        },
    );
    insert(db, Some(&receiving.storage), row).await
}

/// Records the fax; when the record cannot be written, the file it names is
/// deleted, so no stored PDF is left without its record.
async fn insert(
    db: &sea_orm::DatabaseConnection,
    storage: Option<&Storage>,
    row: inbound_fax::ActiveModel,
) -> Result<(), String> {
    let file = match &row.file_path {
        sea_orm::ActiveValue::Set(Some(f)) => Some(f.clone()),
        _ => None,
    };
    let inserted = row.insert(db).await;
    if inserted.is_err()
        && let (Some(storage), Some(file)) = (storage, file)
        && let Err(e) = storage.delete(&file).await
    {
        tracing::warn!(error = %e, "fax: cannot delete a file whose record was not written");
    }
    match inserted {
        Ok(_) => Ok(()),
        // The same event twice at once: the other one recorded it.
        Err(e)
            if matches!(
                e.sql_err(),
                Some(sea_orm::SqlErr::UniqueConstraintViolation(_))
            ) =>
        {
            Ok(())
        }
        Err(e) => Err(e.to_string()),
    }
}

enum Fetched {
    Bytes(bytes::Bytes),
    /// The file is refused for good (too large, not a PDF, a URL we may
    /// not call).
    Refused(String),
    /// Worth another try (the carrier sends the event again).
    Retry(String),
}

async fn fetch(r: &Receiving, url: &str, policy: crate::types::UrlPolicy) -> Fetched {
    let url = match OutboundUrl::parse(url, policy) {
        Ok(u) => u.as_str().to_string(),
        Err(why) => return Fetched::Refused(format!("the media URL was refused: {why}")),
    };
    let limit = r.max_bytes;
    let got = r
        .outbound
        .run(move |client| async move {
            let mut res = client.get(url).send().await.map_err(NetError::from)?;
            if !res.status().is_success() {
                return Err(NetError::Transport(format!("answered {}", res.status())));
            }
            read_body(&mut res, limit).await
        })
        .await
        .unwrap_or_else(Err);
    match got {
        Ok(bytes) if bytes.starts_with(b"%PDF-") => Fetched::Bytes(bytes),
        Ok(_) => Fetched::Refused("the received file is not a PDF".into()),
        Err(NetError::TooLarge { limit }) => {
            Fetched::Refused(format!("the received file is larger than {limit} bytes"))
        }
        Err(NetError::Refused(r)) => Fetched::Refused(format!("the media URL was refused: {r}")),
        Err(e) => Fetched::Retry(e.to_string()),
    }
}
