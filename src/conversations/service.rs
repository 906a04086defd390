//! Conversation operations: visibility, listing, creation, renaming,
//! sharing, posting messages and the account's settings. Handlers parse and
//! call these; each write commits before anything is broadcast.

use std::collections::HashMap;

use chrono::Utc;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection,
    DatabaseTransaction, EntityTrait, FromQueryResult, IntoActiveModel, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect, Set, sea_query::OnConflict,
};

use entity::{conversation, conversation_message, conversation_settings};

use super::events;
use super::model::{
    Audience, Content, ConversationOut, ConversationUid, DEFAULT_TITLE, MessageOut, NewMessage,
    Participant, Title, message_created_data,
};
use super::{list_cache, presence};
use crate::bus::EventBus;
use crate::caller::CallerInfo;
use crate::error::ApiError;

/// Can `caller` read `conv`? Another account's conversation, another user's
/// private one, and every shared one while the account has shared
/// conversations disabled are invisible (reported as 404).
pub fn can_read(caller: &CallerInfo, conv: &conversation::Model) -> bool {
    if conv.account_id != caller.account_id() {
        return false;
    }
    if conv.sharing_enabled {
        caller.account.shared_conversations_enabled
    } else {
        conv.owner_user_id == caller.user.id
    }
}

/// The conversation if the caller can read it, else 404.
pub async fn visible(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    uid: &ConversationUid,
) -> Result<conversation::Model, ApiError> {
    conversation::Entity::find_by_id(uid.as_str())
        .filter(conversation::Column::AccountId.eq(caller.account_id()))
        .one(db)
        .await?
        .filter(|c| can_read(caller, c))
        .ok_or_else(|| ApiError::not_found("conversation"))
}

fn visible_condition(caller: &CallerInfo) -> Condition {
    let own_private = Condition::all()
        .add(conversation::Column::OwnerUserId.eq(caller.user.id))
        .add(conversation::Column::SharingEnabled.eq(false));
    let readable = if caller.account.shared_conversations_enabled {
        Condition::any()
            .add(own_private)
            .add(conversation::Column::SharingEnabled.eq(true))
    } else {
        own_private
    };
    Condition::all()
        .add(conversation::Column::AccountId.eq(caller.account_id()))
        .add(readable)
}

pub struct ListPage {
    pub conversations: Vec<ConversationOut>,
    pub presence: HashMap<String, Vec<Participant>>,
    pub total: u64,
    /// When the first presence entry shown goes stale unless refreshed: the
    /// page may change then without any write (`None`: nobody present).
    pub presence_until: Option<std::time::Instant>,
}

/// A conversation row with the size of the whole filtered set, so a page
/// and its total come from one query.
#[derive(FromQueryResult)]
struct RowWithTotal {
    uid: String,
    title: String,
    sharing_enabled: bool,
    owner_user_id: i64,
    last_sequence: i64,
    created_at: chrono::DateTime<Utc>,
    updated_at: chrono::DateTime<Utc>,
    total: i64,
}

/// The caller's private conversations and the account's shared ones, most
/// recently active first, with who is present in each. `presence_possible`
/// tells whether any of the uids can have presence rows (skips a query
/// when none can).
pub async fn list(
    db: &DatabaseConnection,
    caller: &CallerInfo,
    take: u64,
    skip: u64,
    presence_ttl: std::time::Duration,
    presence_possible: impl Fn(&[&str]) -> bool,
) -> Result<ListPage, ApiError> {
    let query = conversation::Entity::find().filter(visible_condition(caller));
    let rows: Vec<RowWithTotal> = query
        .clone()
        .select_only()
        .columns([
            conversation::Column::Uid,
            conversation::Column::Title,
            conversation::Column::SharingEnabled,
            conversation::Column::OwnerUserId,
            conversation::Column::LastSequence,
            conversation::Column::CreatedAt,
            conversation::Column::UpdatedAt,
        ])
        .column_as(Expr::cust("COUNT(*) OVER ()"), "total")
        .order_by_desc(conversation::Column::UpdatedAt)
        .order_by_desc(conversation::Column::Uid)
        .offset(skip)
        .limit(take)
        .into_model()
        .all(db)
        .await?;
    let total = match rows.first() {
        Some(r) => u64::try_from(r.total).unwrap_or(0),
        // Past the end (or empty): the window saw no rows, count directly.
        None if skip > 0 => query.count(db).await?,
        None => 0,
    };
    let uids: Vec<&str> = rows.iter().map(|r| r.uid.as_str()).collect();
    let (presence, presence_until) = if caller.account.shared_conversations_enabled
        && !uids.is_empty()
        && presence_possible(&uids)
    {
        presence::load_many_until(db, &uids, presence_ttl).await?
    } else {
        (HashMap::new(), None)
    };
    let presence_until = presence_until.map(|at| {
        let left = (at - Utc::now()).to_std().unwrap_or_default();
        std::time::Instant::now() + left
    });
    let conversations = rows
        .into_iter()
        .map(|r| ConversationOut {
            conversation_uid: r.uid,
            title: r.title,
            sharing_enabled: r.sharing_enabled,
            owner_user_id: r.owner_user_id,
            last_sequence: r.last_sequence,
            created_at: r.created_at,
            updated_at: r.updated_at,
        })
        .collect();
    Ok(ListPage {
        conversations,
        presence,
        total,
        presence_until,
    })
}

/// The account's settings (defaults when never saved).
pub async fn settings(
    db: &impl ConnectionTrait,
    account_id: &str,
) -> Result<conversation_settings::Model, ApiError> {
    Ok(conversation_settings::Entity::find_by_id(account_id)
        .one(db)
        .await?
        .unwrap_or_else(|| conversation_settings::Model {
            account_id: account_id.to_string(),
            default_sharing_enabled: false,
            assistant_writes_need_confirmation: true,
            updated_at: Utc::now(),
        }))
}

/// A change of the account's settings: the fields given, the rest kept.
#[derive(Debug, Clone, Copy, Default)]
pub struct SettingsChange {
    pub default_sharing_enabled: Option<bool>,
    pub assistant_writes_need_confirmation: Option<bool>,
}

pub async fn update_settings(
    db: &DatabaseConnection,
    account_id: &str,
    change: SettingsChange,
) -> Result<conversation_settings::Model, ApiError> {
    let txn = crate::db::begin_write(db).await?;
    let now = settings(&txn, account_id).await?;
    let row = conversation_settings::ActiveModel {
        account_id: Set(account_id.to_string()),
        default_sharing_enabled: Set(change
            .default_sharing_enabled
            .unwrap_or(now.default_sharing_enabled)),
        assistant_writes_need_confirmation: Set(change
            .assistant_writes_need_confirmation
            .unwrap_or(now.assistant_writes_need_confirmation)),
        updated_at: Set(Utc::now()),
    };
    conversation_settings::Entity::insert(row)
        .on_conflict(
            OnConflict::column(conversation_settings::Column::AccountId)
                .update_columns([
                    conversation_settings::Column::DefaultSharingEnabled,
                    conversation_settings::Column::AssistantWritesNeedConfirmation,
                    conversation_settings::Column::UpdatedAt,
                ])
                .to_owned(),
        )
        .exec(&txn)
        .await?;
    let out = settings(&txn, account_id).await?;
    txn.commit().await?;
    Ok(out)
}

fn sharing_disabled_error() -> ApiError {
    ApiError::invalid(
        "sharingEnabled",
        "shared conversations are disabled for this account",
    )
}

/// Creates a conversation owned by the caller. Sharing: the explicit value,
/// else the account default, else private; never shared while the account
/// has shared conversations disabled.
pub async fn create(
    db: &DatabaseConnection,
    bus: &EventBus,
    caller: &CallerInfo,
    sharing: Option<bool>,
    title: Option<Title>,
) -> Result<ConversationOut, ApiError> {
    let shared_allowed = caller.account.shared_conversations_enabled;
    let sharing_enabled = match sharing {
        Some(true) if !shared_allowed => return Err(sharing_disabled_error()),
        Some(explicit) => explicit,
        None => {
            shared_allowed
                && settings(db, caller.account_id())
                    .await?
                    .default_sharing_enabled
        }
    };
    let now = Utc::now();
    let (title, title_is_auto) = match title {
        Some(t) => (t.into_inner(), false),
        None => (DEFAULT_TITLE.to_string(), true),
    };
    let txn = crate::db::begin_write(db).await?;
    let row = conversation::ActiveModel {
        uid: Set(ConversationUid::new_random().as_str().to_string()),
        account_id: Set(caller.account_id().to_string()),
        owner_user_id: Set(caller.user.id),
        title: Set(title),
        title_is_auto: Set(title_is_auto),
        sharing_enabled: Set(sharing_enabled),
        last_sequence: Set(0),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&txn)
    .await?;
    list_cache::bump(&txn, &row.account_id).await?;
    txn.commit().await?;
    bus.publish(events::changed(&row.account_id)).await;
    Ok(row.into())
}

/// Renames a conversation; only its owner may.
pub async fn rename(
    db: &DatabaseConnection,
    bus: &EventBus,
    caller: &CallerInfo,
    uid: &ConversationUid,
    title: Title,
) -> Result<ConversationOut, ApiError> {
    let conv = visible(db, caller, uid).await?;
    if conv.owner_user_id != caller.user.id {
        return Err(ApiError::Forbidden(
            "only the conversation's owner can rename it".into(),
        ));
    }
    let mut active = conv.into_active_model();
    active.title = Set(title.into_inner());
    active.title_is_auto = Set(false);
    active.updated_at = Set(Utc::now());
    let txn = crate::db::begin_write(db).await?;
    let conv = active.update(&txn).await?;
    list_cache::bump(&txn, &conv.account_id).await?;
    txn.commit().await?;
    bus.publish(events::changed(&conv.account_id)).await;
    Ok(conv.into())
}

/// Turns sharing on or off. Anyone who can read the conversation may; when
/// it turns private, teammates' open streams are closed.
pub async fn set_sharing(
    db: &DatabaseConnection,
    bus: &EventBus,
    caller: &CallerInfo,
    uid: &ConversationUid,
    sharing_enabled: bool,
) -> Result<ConversationOut, ApiError> {
    let conv = visible(db, caller, uid).await?;
    if sharing_enabled && !caller.account.shared_conversations_enabled {
        return Err(sharing_disabled_error());
    }
    if conv.sharing_enabled == sharing_enabled {
        return Ok(conv.into());
    }
    let mut active = conv.into_active_model();
    active.sharing_enabled = Set(sharing_enabled);
    active.updated_at = Set(Utc::now());
    let txn = crate::db::begin_write(db).await?;
    let conv = active.update(&txn).await?;
    list_cache::bump(&txn, &conv.account_id).await?;
    txn.commit().await?;
    bus.publish(events::access(
        &conv.account_id,
        &conv.uid,
        conv.owner_user_id,
        sharing_enabled,
    ))
    .await;
    Ok(conv.into())
}

/// Persists a message with the next sequence, then broadcasts it.
pub async fn post_message(
    db: &DatabaseConnection,
    writes: &crate::db::WriteGate,
    bus: &EventBus,
    caller: &CallerInfo,
    uid: &ConversationUid,
    audience: Audience,
    content: Content,
) -> Result<MessageOut, ApiError> {
    let author = Participant {
        user_id: caller.user.id,
        name: caller.user.name.clone(),
        email: Some(caller.user.email.clone()),
    };
    let new = NewMessage::by(author, audience, content);
    // Urgent: a room is waiting for it.
    let turn = writes.enter_urgent().await;
    let txn = crate::db::begin_write(db).await?;
    let message =
        insert_message(&txn, caller.account_id(), uid.as_str(), Some(caller), new).await?;
    txn.commit().await?;
    drop(turn);
    publish_message(bus, caller.account_id(), uid.as_str(), &message).await;
    Ok(message)
}

/// Appends a message with the next sequence inside `txn` (the caller
/// commits, then calls [`publish_message`]). With `reader`, the
/// conversation must be visible to that caller (else 404); without, it
/// must belong to `account_id` (the assistant writes as no one).
///
/// The sequence is taken by incrementing the conversation's counter inside
/// the write transaction: the row lock serialises writers, so sequences are
/// strictly increasing and commit in order, and readers never see a gap.
pub async fn insert_message(
    txn: &DatabaseTransaction,
    account_id: &str,
    uid: &str,
    reader: Option<&CallerInfo>,
    new: NewMessage,
) -> Result<MessageOut, ApiError> {
    let now = Utc::now();
    // One statement checks visibility, takes the next sequence and returns
    // the row: each round trip to the database is on the post's (and so the
    // fan-out's) latency path, and no sharing change can slip in between.
    let mut update = conversation::Entity::update_many()
        .col_expr(
            conversation::Column::LastSequence,
            Expr::col(conversation::Column::LastSequence).add(1),
        )
        .col_expr(conversation::Column::UpdatedAt, Expr::value(now))
        .filter(conversation::Column::Uid.eq(uid))
        .filter(conversation::Column::AccountId.eq(account_id));
    if let Some(reader) = reader {
        update = update.filter(visible_condition(reader));
    }
    let conv = update
        .exec_with_returning(txn)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| ApiError::not_found("conversation"))?;
    let sequence = conv.last_sequence;
    let data = new
        .data
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(ApiError::internal)?;
    let author = new.author;
    let row = conversation_message::ActiveModel {
        conversation_uid: Set(conv.uid.clone()),
        sequence: Set(sequence),
        audience: Set(new.audience.as_str().to_string()),
        content: Set(new.content.as_str().to_string()),
        author_user_id: Set(author.as_ref().map(|a| a.user_id)),
        author_name: Set(author.as_ref().map(|a| a.name.clone())),
        author_email: Set(author.and_then(|a| a.email)),
        created_at: Set(now),
        run_id: Set(new.run_id),
        kind: Set(new.kind.map(str::to_string)),
        data: Set(data),
        ..Default::default()
    }
    .insert(txn)
    .await?;
    if sequence == 1
        && conv.title_is_auto
        && let Some(title) = Title::from_first_message(new.content.as_str())
    {
        let mut active = conv.into_active_model();
        active.title = Set(title.into_inner());
        active.update(txn).await?;
    }
    list_cache::bump(txn, account_id).await?;
    Ok(MessageOut::from(row))
}

/// Announces a committed message to the rooms (every instance's).
pub async fn publish_message(bus: &EventBus, account_id: &str, uid: &str, message: &MessageOut) {
    bus.publish(events::message(
        account_id,
        uid,
        message.sequence,
        message_created_data(uid, message),
    ))
    .await;
}

/// What a room re-checks on every tick.
pub struct RoomState {
    pub owner_user_id: i64,
    pub sharing_enabled: bool,
    /// The account allows shared conversations.
    pub shared_allowed: bool,
    pub last_sequence: i64,
}

/// The conversation's access and last sequence; `None` once it is gone.
pub async fn room_state(
    db: &impl ConnectionTrait,
    uid: &str,
) -> Result<Option<RoomState>, sea_orm::DbErr> {
    let Some(conv) = conversation::Entity::find_by_id(uid).one(db).await? else {
        return Ok(None);
    };
    let shared_allowed = entity::account::Entity::find_by_id(conv.account_id.clone())
        .one(db)
        .await?
        .is_some_and(|a| a.shared_conversations_enabled);
    Ok(Some(RoomState {
        owner_user_id: conv.owner_user_id,
        sharing_enabled: conv.sharing_enabled,
        shared_allowed,
        last_sequence: conv.last_sequence,
    }))
}

/// Persisted messages with `after < sequence <= upto`, in order.
pub async fn messages_between(
    db: &impl ConnectionTrait,
    uid: &str,
    after: i64,
    upto: Option<i64>,
    limit: u64,
) -> Result<Vec<MessageOut>, sea_orm::DbErr> {
    let mut q = conversation_message::Entity::find()
        .filter(conversation_message::Column::ConversationUid.eq(uid))
        .filter(conversation_message::Column::Sequence.gt(after));
    if let Some(upto) = upto {
        q = q.filter(conversation_message::Column::Sequence.lte(upto));
    }
    Ok(q.order_by_asc(conversation_message::Column::Sequence)
        .limit(limit)
        .all(db)
        .await?
        .into_iter()
        .map(Into::into)
        .collect())
}
