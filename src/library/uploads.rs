//! File uploads: `create_material_upload` reserves a material and answers
//! an expiring write URL, `PUT /uploads/{token}`, for a browser to send the
//! bytes to without a bearer credential; the reservation is then finalised
//! through the material lifecycle (`uploaded` → `draft`).
//!
//! The token is a credential of the stream-token kind (`mup_<prefix>_<secret>`,
//! ~238 bits, made by `auth::keys`): only SHA-256 of it is stored, on the
//! material's row, found by its non-secret prefix and compared in constant
//! time. The row binds it to one account, one material, a declared size and
//! content type, and an expiry. It is single-use: the PUT claims the
//! reservation with a conditional update (`reserved` → `uploading`), so a
//! replay, or the same URL sent to a second instance, is refused.
//!
//! The body is streamed chunk by chunk to a temporary file beside its final
//! place (`{AGENTIC_UPLOAD_STORAGE_DIR}/{accountId}/{materialId}`), hashed
//! as it goes, synced, then renamed into place: memory stays flat whatever
//! the size. The content is checked by its first bytes (magic numbers), not
//! by the file's name; a ZIP-based Office file also by its central
//! directory (it must name `ppt/` resp. `xl/` entries).

use std::path::{Path, PathBuf};
use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, Set};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
use utoipa::ToSchema;

use entity::material as row;

use super::materials::MaterialOut;
use super::model::{self, Destination};
use crate::auth::keys;
use crate::caller::CallerInfo;
use crate::error::{ApiError, Issues, Kind};
use crate::http::AppState;
use crate::ops::{Access, Ctx, Input, Json, Nothing, Operation, Verb};

/// The spec's largest Teach file: 100 MB.
pub const MAX_BYTES: i64 = 100 * 1024 * 1024;

/// Upload tokens are `mup_<prefix>_<secret>`.
pub const TOKEN_TAG: &str = "mup";

/// Where the write URLs live (outside `/api/v2`: no bearer credential).
pub const PATH: &str = "/uploads";

/// How many first bytes the content check reads.
const HEAD: usize = 8 * 1024;

/// How long an `uploading` claim may last before the pruning job takes it
/// for a crashed upload (after the URL's own expiry).
const STALE_CLAIM: Duration = Duration::from_secs(3600);

/// The accepted content types and their short names.
pub const ACCEPTED: [(&str, &str); 8] = [
    ("application/pdf", "PDF"),
    (
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "PowerPoint (.pptx)",
    ),
    (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "Excel (.xlsx)",
    ),
    ("text/csv", "CSV"),
    ("image/png", "PNG"),
    ("image/jpeg", "JPEG"),
    ("image/gif", "GIF"),
    ("image/webp", "WebP"),
];

/// Does `head` (the first bytes, or all of a shorter file) look like
/// `content_type`?
pub fn head_matches(content_type: &str, head: &[u8]) -> bool {
    match content_type {
        "application/pdf" => head.starts_with(b"%PDF-"),
        "application/vnd.openxmlformats-officedocument.presentationml.presentation"
        | "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => {
            head.starts_with(b"PK\x03\x04")
        }
        "text/csv" => {
            !head.contains(&0)
                && match std::str::from_utf8(head) {
                    Ok(_) => true,
                    // A character cut by the end of the head is fine.
                    Err(e) => e.error_len().is_none(),
                }
        }
        "image/png" => head.starts_with(b"\x89PNG\r\n\x1a\n"),
        "image/jpeg" => head.starts_with(b"\xff\xd8\xff"),
        "image/gif" => head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a"),
        "image/webp" => head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP",
        _ => false,
    }
}

/// The entry-name prefix a ZIP-based Office type's central directory must
/// hold.
fn zip_part(content_type: &str) -> Option<&'static [u8]> {
    match content_type {
        "application/vnd.openxmlformats-officedocument.presentationml.presentation" => {
            Some(b"ppt/")
        }
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => Some(b"xl/"),
        _ => None,
    }
}

/// `Content-Type`'s essence, lower-case, without parameters.
fn essence(value: &str) -> String {
    value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The upload storage: `{root}/{accountId}/{materialId}`, directories 0700,
/// files 0600. Instances sharing a database must share it.
#[derive(Debug, Clone)]
pub struct Storage {
    root: PathBuf,
}

fn safe(part: &str) -> Result<&str, ApiError> {
    let ok = !part.is_empty()
        && part.len() <= 100
        && part
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !part.starts_with('.');
    if ok {
        Ok(part)
    } else {
        Err(ApiError::internal("unsafe storage name"))
    }
}

impl Storage {
    pub fn new(root: PathBuf) -> Self {
        Storage { root }
    }

    fn dir(&self, account_id: &str) -> Result<PathBuf, ApiError> {
        Ok(self.root.join(safe(account_id)?))
    }

    /// The final place of a material's bytes, relative to the root.
    fn relative(account_id: &str, material_id: &str) -> Result<String, ApiError> {
        Ok(format!("{}/{}", safe(account_id)?, safe(material_id)?))
    }

    fn temp_prefix(material_id: &str) -> String {
        format!(".{material_id}.part-")
    }

    async fn create_dir(&self, account_id: &str) -> std::io::Result<PathBuf> {
        let dir = self
            .dir(account_id)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let mut b = tokio::fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        b.mode(0o700);
        b.create(&dir).await?;
        Ok(dir)
    }

    /// Removes a material's temporary files and stored bytes, if any.
    pub async fn remove(&self, account_id: &str, material_id: &str) {
        let Ok(dir) = self.dir(account_id) else {
            return;
        };
        let Ok(mut entries) = tokio::fs::read_dir(&dir).await else {
            return;
        };
        let temp = Self::temp_prefix(material_id);
        while let Ok(Some(e)) = entries.next_entry().await {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name == material_id || name.starts_with(&temp) {
                let _ = tokio::fs::remove_file(e.path()).await;
            }
        }
    }
}

/// `create_material_upload`'s body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UploadCreate {
    /// 1 to 255 characters.
    pub title: String,
    pub description: Option<String>,
    /// The file's name, for people (never used to check the content).
    pub file_name: Option<String>,
    /// One of the accepted types; the PUT must send it and the bytes must
    /// be of it.
    pub content_type: String,
    /// The exact size, 1 to 104,857,600 (100 MB); the PUT's
    /// `Content-Length` must equal it.
    pub size_bytes: i64,
    pub advertiser_id: Option<String>,
    /// Default `{type: "library"}`.
    pub destination: Option<Destination>,
}

/// Where and how to send the bytes.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadTarget {
    /// `{public URL}/uploads/{token}`: a write URL, used once, no bearer.
    pub url: String,
    /// `PUT`.
    pub method: String,
    /// Headers the PUT must carry (`Content-Type`).
    #[schema(value_type = Object)]
    pub headers: serde_json::Value,
    pub expires_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadOut {
    pub material: MaterialOut,
    pub upload: UploadTarget,
}

/// Reserves a file material for the caller and answers its write URL.
pub async fn reserve(
    ctx: &Ctx,
    caller: &CallerInfo,
    body: UploadCreate,
) -> Result<UploadOut, ApiError> {
    let mut issues = Issues::default();
    let title = model::title(&body.title, "title", &mut issues);
    let description = body
        .description
        .as_deref()
        .map(|d| model::text(d, "description", model::MAX_TEXT, false, &mut issues));
    let content_type = essence(&body.content_type);
    if !ACCEPTED.iter().any(|(t, _)| *t == content_type) {
        issues.add(
            "contentType",
            format!(
                "must be one of: {}",
                ACCEPTED.iter().map(|a| a.0).collect::<Vec<_>>().join(", ")
            ),
        );
    }
    if body.size_bytes < 1 {
        issues.add("sizeBytes", "must be at least 1");
    }
    let file_name = body.file_name.as_deref().map(|n| {
        let n = n.trim();
        if n.is_empty()
            || n.chars().count() > model::MAX_TITLE
            || n.chars().any(|c| c.is_control() || c == '/' || c == '\\')
        {
            issues.add(
                "fileName",
                "must be 1 to 255 characters, without control characters or slashes",
            );
        }
        n.to_string()
    });
    issues.into_result()?;
    if body.size_bytes > MAX_BYTES {
        return Err(ApiError::PayloadTooLarge {
            limit: MAX_BYTES as usize,
        });
    }
    if let Some(a) = &body.advertiser_id {
        model::own_advertiser(&ctx.db, caller, a).await?;
    }
    let (dest, dest_id) = model::destination(
        &ctx.db,
        caller,
        &body.destination.unwrap_or_else(Destination::library),
    )
    .await?;
    let now = model::now();
    let ttl = chrono::Duration::from_std(Duration::from_secs(ctx.config.upload_url_seconds))
        .map_err(ApiError::internal)?;
    let expires_at = now + ttl;
    let token = keys::generate_tagged(TOKEN_TAG);
    let made = row::ActiveModel {
        id: Set(model::new_id()),
        account_id: Set(caller.account_id().to_string()),
        owner_user_id: Set(caller.user.id),
        title: Set(title),
        description: Set(description),
        kind: Set(model::FILE.into()),
        content_type: Set(Some(content_type.clone())),
        file_name: Set(file_name),
        size_bytes: Set(Some(body.size_bytes)),
        sha256: Set(None),
        status: Set(model::RESERVED.into()),
        rejection_reason: Set(None),
        destination_type: Set(dest),
        destination_id: Set(dest_id),
        advertiser_id: Set(body.advertiser_id),
        storage_path: Set(None),
        upload_prefix: Set(Some(token.prefix)),
        upload_token_hash: Set(Some(token.hash)),
        upload_expires_at: Set(Some(expires_at)),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&ctx.db)
    .await?;
    Ok(UploadOut {
        material: made.into(),
        upload: UploadTarget {
            url: format!("{}{PATH}/{}", ctx.public_url, token.key),
            method: "PUT".into(),
            headers: json!({ "Content-Type": content_type }),
            expires_at,
        },
    })
}

pub struct CreateMaterialUpload;

impl Operation for CreateMaterialUpload {
    const NAME: &'static str = "create_material_upload";
    const DESCRIPTION: &'static str = "Reserve a file material (PDF, PowerPoint .pptx, Excel .xlsx, CSV, PNG, JPEG, GIF or WebP, up to 100 MB) and get an expiring, single-use write URL: PUT the bytes there with the given Content-Type and the declared size, no bearer credential. Then finalise it with update_material status draft.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/materials/uploads";
    const STATUS: u16 = 201;
    const ERRORS: &'static [(u16, &'static str)] = &[
        (
            400,
            "contentType not accepted, sizeBytes below 1, bad title or fileName",
        ),
        (
            404,
            "advertiserId or destination names no advertiser of the account",
        ),
        (413, "sizeBytes above 100 MB (104857600 bytes)"),
    ];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<UploadCreate>;
    type Output = UploadOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<UploadOut, ApiError> {
        reserve(ctx, caller, input.body.0).await
    }
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource(format!("{PATH}/{{token}}")).route(web::put().to(put)));
}

fn not_found() -> ApiError {
    ApiError::not_found("upload")
}

fn used() -> ApiError {
    ApiError::Conflict {
        message: "this upload URL was already used; reserve a new upload".into(),
        details: Some(json!({"reason": "already_used"})),
    }
}

fn expired() -> ApiError {
    ApiError::coded(
        Kind::Gone,
        "UPLOAD_EXPIRED",
        "this upload URL expired; reserve a new upload",
        json!({}),
    )
}

/// The reservation a token names, if the token is genuine.
async fn reservation(db: &DatabaseConnection, token: &str) -> Result<row::Model, ApiError> {
    let prefix = keys::prefix_of_tagged(TOKEN_TAG, token).ok_or_else(not_found)?;
    let m = row::Entity::find()
        .filter(row::Column::UploadPrefix.eq(prefix))
        .one(db)
        .await?
        .ok_or_else(not_found)?;
    let hash = m.upload_token_hash.as_deref().unwrap_or("");
    if !keys::hashes_match(hash, &keys::hash_hex(token)) {
        return Err(not_found());
    }
    Ok(m)
}

/// `PUT /uploads/{token}`.
async fn put(
    req: HttpRequest,
    token: web::Path<String>,
    body: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let m = reservation(&state.db, &token).await?;
    if m.status != model::RESERVED {
        return Err(used());
    }
    let now = Utc::now();
    if m.upload_expires_at.is_none_or(|at| at <= now) {
        return Err(expired());
    }
    let declared_type = m.content_type.clone().unwrap_or_default();
    let declared_size = m.size_bytes.unwrap_or(0);
    let sent_type = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(essence)
        .unwrap_or_default();
    if sent_type != declared_type {
        return Err(ApiError::UnsupportedMediaType(format!(
            "this upload takes Content-Type {declared_type}"
        )));
    }
    let length = req
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok());
    match length {
        Some(n) if n > MAX_BYTES => {
            return Err(ApiError::PayloadTooLarge {
                limit: MAX_BYTES as usize,
            });
        }
        Some(n) if n == declared_size => {}
        Some(_) => {
            return Err(ApiError::invalid(
                "Content-Length",
                format!("must equal the reserved size, {declared_size} bytes"),
            ));
        }
        None => {
            return Err(ApiError::invalid(
                "Content-Length",
                format!("is required and must equal the reserved size, {declared_size} bytes"),
            ));
        }
    }
    // The claim: one PUT, on one instance, wins.
    let claimed = row::Entity::update_many()
        .col_expr(row::Column::Status, Expr::value(model::UPLOADING))
        .col_expr(row::Column::UpdatedAt, Expr::value(now))
        .filter(row::Column::Id.eq(&m.id))
        .filter(row::Column::Status.eq(model::RESERVED))
        .filter(row::Column::UploadExpiresAt.gt(now))
        .exec(&state.db)
        .await?;
    if claimed.rows_affected == 0 {
        return Err(used());
    }
    let storage = state.get::<Storage>()?.clone();
    match receive(&storage, &m, body).await {
        Ok((sha, rel)) => {
            let done = row::Entity::update_many()
                .col_expr(row::Column::Status, Expr::value(model::UPLOADED))
                .col_expr(row::Column::Sha256, Expr::value(sha))
                .col_expr(row::Column::StoragePath, Expr::value(rel))
                .col_expr(row::Column::UpdatedAt, Expr::value(Utc::now()))
                .filter(row::Column::Id.eq(&m.id))
                .filter(row::Column::Status.eq(model::UPLOADING))
                .exec(&state.db)
                .await;
            match done {
                Ok(r) if r.rows_affected == 1 => {}
                Ok(_) => {
                    // Pruned meanwhile (a stale claim): the bytes go too.
                    storage.remove(&m.account_id, &m.id).await;
                    return Err(expired());
                }
                Err(e) => {
                    fail(&state.db, &storage, &m).await;
                    return Err(e.into());
                }
            }
            let after = row::Entity::find_by_id(&m.id)
                .one(&state.db)
                .await?
                .ok_or_else(not_found)?;
            Ok(HttpResponse::Ok().json(json!({
                "data": { "material": MaterialOut::from(after) },
                "error": null,
            })))
        }
        Err(e) => {
            fail(&state.db, &storage, &m).await;
            Err(e)
        }
    }
}

/// A failed PUT: its files go, the reservation is `failed` (reserve again).
async fn fail(db: &DatabaseConnection, storage: &Storage, m: &row::Model) {
    storage.remove(&m.account_id, &m.id).await;
    let marked = row::Entity::update_many()
        .col_expr(row::Column::Status, Expr::value(model::FAILED))
        .col_expr(row::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(row::Column::Id.eq(&m.id))
        .filter(row::Column::Status.eq(model::UPLOADING))
        .exec(db)
        .await;
    if let Err(e) = marked {
        tracing::warn!(error = %e, material = %m.id, "upload: cannot mark a failed upload");
    }
}

/// Streams the body to a temporary file, checking and hashing it; renames
/// it into place. Answers the hex SHA-256 and the relative path.
async fn receive(
    storage: &Storage,
    m: &row::Model,
    mut body: web::Payload,
) -> Result<(String, String), ApiError> {
    let declared_type = m.content_type.clone().unwrap_or_default();
    let size = u64::try_from(m.size_bytes.unwrap_or(0)).unwrap_or(0);
    let dir = storage
        .create_dir(&m.account_id)
        .await
        .map_err(ApiError::internal)?;
    let rel = Storage::relative(&m.account_id, &m.id)?;
    let temp = dir.join(format!(
        "{}{}",
        Storage::temp_prefix(&m.id),
        keys::random_base62(8)
    ));
    let mut opts = tokio::fs::OpenOptions::new();
    opts.write(true).read(true).create_new(true);
    #[cfg(unix)]
    opts.mode(0o600);
    let mut file = opts.open(&temp).await.map_err(ApiError::internal)?;
    let mut hasher = Sha256::new();
    let mut received: u64 = 0;
    let head_len = usize::try_from(size).unwrap_or(HEAD).min(HEAD);
    let mut head: Vec<u8> = Vec::with_capacity(head_len);
    let mut checked = false;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| ApiError::BadRequest(format!("upload interrupted: {e}")))?;
        received += chunk.len() as u64;
        if received > size {
            return Err(ApiError::invalid(
                "Content-Length",
                format!("the body exceeds the reserved size, {size} bytes"),
            ));
        }
        if !checked {
            let take = (head_len - head.len()).min(chunk.len());
            head.extend_from_slice(&chunk[..take]);
            if head.len() >= head_len {
                check_head(&declared_type, &head)?;
                checked = true;
            }
        }
        hasher.update(&chunk);
        file.write_all(&chunk).await.map_err(ApiError::internal)?;
    }
    if received != size {
        return Err(ApiError::invalid(
            "Content-Length",
            format!("received {received} of the reserved {size} bytes"),
        ));
    }
    if !checked {
        check_head(&declared_type, &head)?;
    }
    if let Some(part) = zip_part(&declared_type) {
        check_zip_tail(&mut file, size, part, &declared_type).await?;
    }
    file.sync_all().await.map_err(ApiError::internal)?;
    drop(file);
    tokio::fs::rename(&temp, dir.join(&m.id))
        .await
        .map_err(ApiError::internal)?;
    sync_dir(&dir).await;
    Ok((hex::encode(hasher.finalize()), rel))
}

fn check_head(declared: &str, head: &[u8]) -> Result<(), ApiError> {
    if head_matches(declared, head) {
        Ok(())
    } else {
        Err(ApiError::UnsupportedMediaType(format!(
            "the content is not {declared} (checked by its first bytes)"
        )))
    }
}

/// The last 64 KiB of a ZIP hold its central directory's end record and
/// (at least some of) its entry names: an Office file names its parts.
async fn check_zip_tail(
    file: &mut tokio::fs::File,
    size: u64,
    part: &[u8],
    declared: &str,
) -> Result<(), ApiError> {
    let tail_len = size.min(64 * 1024);
    file.seek(std::io::SeekFrom::Start(size - tail_len))
        .await
        .map_err(ApiError::internal)?;
    let mut tail = Vec::with_capacity(usize::try_from(tail_len).unwrap_or(0));
    file.take(tail_len)
        .read_to_end(&mut tail)
        .await
        .map_err(ApiError::internal)?;
    let has = |needle: &[u8]| tail.windows(needle.len()).any(|w| w == needle);
    if has(b"PK\x05\x06") && has(part) {
        Ok(())
    } else {
        Err(ApiError::UnsupportedMediaType(format!(
            "the content is not {declared} (its ZIP directory names no {} parts)",
            String::from_utf8_lossy(part)
        )))
    }
}

/// Makes a rename durable (best effort; not every platform syncs a directory).
async fn sync_dir(dir: &Path) {
    if let Ok(d) = tokio::fs::File::open(dir).await {
        let _ = d.sync_all().await;
    }
}

/// Deletes reservations that were never completed: `reserved` and `failed`
/// ones past their URL's expiry, and `uploading` claims older than that
/// by an hour (an upload cut by a crash), with their files. Returns how many.
pub async fn prune(
    db: &DatabaseConnection,
    storage: &Storage,
    now: DateTime<Utc>,
) -> Result<u64, sea_orm::DbErr> {
    let stale = now - chrono::Duration::from_std(STALE_CLAIM).unwrap_or_default();
    let rows = row::Entity::find()
        .filter(
            sea_orm::Condition::any()
                .add(
                    sea_orm::Condition::all()
                        .add(row::Column::Status.is_in([model::RESERVED, model::FAILED]))
                        .add(row::Column::UploadExpiresAt.lt(now)),
                )
                .add(
                    sea_orm::Condition::all()
                        .add(row::Column::Status.eq(model::UPLOADING))
                        .add(row::Column::UploadExpiresAt.lt(stale)),
                ),
        )
        .all(db)
        .await?;
    let mut pruned = 0;
    for m in rows {
        // Conditional on the status read: an upload that just claimed it stays.
        let gone = row::Entity::delete_many()
            .filter(row::Column::Id.eq(&m.id))
            .filter(row::Column::Status.eq(&m.status))
            .exec(db)
            .await?;
        if gone.rows_affected == 1 {
            storage.remove(&m.account_id, &m.id).await;
            pruned += 1;
        }
    }
    Ok(pruned)
}

/// Runs [`prune`] every `every` until `stop` (first run one interval after
/// start, as the OAuth pruning does).
pub fn spawn_pruning(
    db: DatabaseConnection,
    storage: Storage,
    every: Duration,
    stop: tokio_util::sync::CancellationToken,
) {
    let every = every.max(Duration::from_millis(10));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            match prune(&db, &storage, Utc::now()).await {
                Ok(n) if n > 0 => tracing::info!(reservations = n, "uploads: pruned"),
                Ok(_) => {}
                Err(err) => tracing::warn!(error = %err, "uploads: pruning failed"),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads() {
        assert!(head_matches("application/pdf", b"%PDF-1.7\n"));
        assert!(!head_matches("application/pdf", b"\x89PNG\r\n\x1a\n"));
        assert!(head_matches("image/png", b"\x89PNG\r\n\x1a\nrest"));
        assert!(head_matches("image/jpeg", b"\xff\xd8\xff\xe0"));
        assert!(head_matches("image/gif", b"GIF89a..."));
        assert!(head_matches("image/webp", b"RIFF\x10\0\0\0WEBPVP8 "));
        assert!(!head_matches("image/webp", b"RIFF\x10\0\0\0WAVE"));
        assert!(head_matches("text/csv", "a,b\né,\u{e9}".as_bytes()));
        assert!(head_matches("text/csv", &"é".as_bytes()[..1]));
        assert!(!head_matches("text/csv", b"a,b\0"));
        assert!(!head_matches("text/csv", b"MZ\x90\0"));
        assert!(!head_matches("application/x-msdownload", b"MZ"));
        assert_eq!(essence("Text/CSV; charset=utf-8"), "text/csv");
    }
}
