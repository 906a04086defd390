//! The conversation operations, each declared once; REST, the dispatcher
//! and agent tools are derived from them. The event stream is a route of
//! its own (`routes.rs`): it is a stream, not an operation.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use super::list_cache::{ListCache, ListKey};
use super::model::{
    Audience, Content, ConversationOut, ConversationUid, MessageOut, Participant, Title,
};
use super::rooms_handle;
use super::service;
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{
    Access, Ctx, Input, Json, MaybeJson, Nothing, Operation, OperationDef, Page, Pagination,
    Params, Verb, def,
};

pub static OPERATIONS: &[&OperationDef] = &[
    &def::<ListConversations>(),
    &def::<CreateConversation>(),
    &def::<RenameConversation>(),
    &def::<SetConversationSharing>(),
    &def::<PostConversationMessage>(),
    &def::<GetConversationSettings>(),
    &def::<UpdateConversationSettings>(),
];

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationPath {
    /// The conversation's uid (a UUID).
    pub conversation_uid: String,
}

impl ConversationPath {
    fn uid(&self) -> Result<ConversationUid, ApiError> {
        ConversationUid::parse(&self.conversation_uid)
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationList {
    pub conversations: Vec<ConversationOut>,
    /// Conversation uid to the users with the room open (only conversations
    /// with someone present; empty when shared conversations are disabled).
    pub presence_by_conversation_uid: HashMap<String, Vec<Participant>>,
    pub total_count: u64,
    pub has_more: bool,
}

/// A list page, serialized once (and cached on a single instance).
pub struct ListOut {
    data: Box<RawValue>,
    pagination: Pagination,
}

impl Serialize for ListOut {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.data.serialize(s)
    }
}

/// Described as what it holds.
impl utoipa::PartialSchema for ListOut {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        <ConversationList as utoipa::PartialSchema>::schema()
    }
}

impl ToSchema for ListOut {
    fn name() -> std::borrow::Cow<'static, str> {
        <ConversationList as ToSchema>::name()
    }
    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        <ConversationList as ToSchema>::schemas(schemas)
    }
}

pub struct ListConversations;

impl Operation for ListConversations {
    const NAME: &'static str = "list_conversations";
    const DESCRIPTION: &'static str = "The caller's private conversations and the account's shared ones, most recently active first, with who is present in each.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/assistant/conversations";
    type Path = Nothing;
    type Query = Page<20, 100>;
    type Body = Nothing;
    type Output = ListOut;

    async fn run(ctx: &Ctx, caller: &CallerInfo, input: Input<Self>) -> Result<ListOut, ApiError> {
        let page = input.query;
        let cache = ctx.get::<Arc<ListCache>>()?;
        let key = ListKey {
            account_id: caller.account_id().to_string(),
            user_id: caller.user.id,
            shared_enabled: caller.account.shared_conversations_enabled,
            take: page.take,
            skip: page.skip,
            generation: cache.generation(&ctx.db, caller.account_id()).await?,
        };
        if let Some((data, pagination)) = cache.get(&key) {
            return Ok(ListOut { data, pagination });
        }
        let ttl = ctx.config.rooms.presence_ttl();
        let rooms = rooms_handle(ctx)?;
        let possible = |uids: &[&str]| ctx.bus.is_distributed() || rooms.any_open(uids);
        let found = service::list(&ctx.db, caller, page.take, page.skip, ttl, possible).await?;
        let pagination = page.of(found.total);
        let list = ConversationList {
            has_more: pagination.has_more,
            total_count: found.total,
            conversations: found.conversations,
            presence_by_conversation_uid: found.presence,
        };
        let data = serde_json::value::to_raw_value(&list).map_err(ApiError::internal)?;
        cache.put(key, (data.clone(), pagination), found.presence_until);
        Ok(ListOut { data, pagination })
    }

    fn pagination(out: &ListOut) -> Option<Pagination> {
        Some(out.pagination)
    }
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateConversationIn {
    /// Explicit value wins; else the account default; else `false`.
    pub sharing_enabled: Option<bool>,
    /// 1 to 255 characters after trimming; auto-generated when omitted.
    #[schema(min_length = 1, max_length = 255)]
    pub title: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationEnvelope {
    pub conversation: ConversationOut,
}

pub struct CreateConversation;

impl Operation for CreateConversation {
    const NAME: &'static str = "create_conversation";
    const DESCRIPTION: &'static str =
        "Start a conversation owned by the caller. The body is optional.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/assistant/conversations";
    const STATUS: u16 = 201;
    type Path = Nothing;
    type Query = Nothing;
    type Body = MaybeJson<CreateConversationIn>;
    type Output = ConversationEnvelope;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<ConversationEnvelope, ApiError> {
        let body = input.body.0;
        let title = body.title.as_deref().map(Title::parse).transpose()?;
        let conversation =
            service::create(&ctx.db, &ctx.bus, caller, body.sharing_enabled, title).await?;
        Ok(ConversationEnvelope { conversation })
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RenameConversationIn {
    #[schema(min_length = 1, max_length = 255, pattern = r"\S")]
    pub title: String,
}

pub struct RenameConversation;

impl Operation for RenameConversation {
    const NAME: &'static str = "rename_conversation";
    const DESCRIPTION: &'static str = "Rename a conversation (owner only).";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Patch;
    const PATH: &'static str = "/assistant/conversations/{conversationUid}/title";
    const ERRORS: &'static [(u16, &'static str)] =
        &[(403, "a teammate who is not the owner, or a read-only key")];
    type Path = Params<ConversationPath>;
    type Query = Nothing;
    type Body = Json<RenameConversationIn>;
    type Output = ConversationEnvelope;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<ConversationEnvelope, ApiError> {
        let uid = input.path.0.uid()?;
        let title = Title::parse(&input.body.0.title)?;
        let conversation = service::rename(&ctx.db, &ctx.bus, caller, &uid, title).await?;
        Ok(ConversationEnvelope { conversation })
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ShareConversationIn {
    pub sharing_enabled: bool,
}

pub struct SetConversationSharing;

impl Operation for SetConversationSharing {
    const NAME: &'static str = "set_conversation_sharing";
    const DESCRIPTION: &'static str =
        "Turn sharing on or off (anyone who can read the conversation).";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Patch;
    const PATH: &'static str = "/assistant/conversations/{conversationUid}/sharing";
    type Path = Params<ConversationPath>;
    type Query = Nothing;
    type Body = Json<ShareConversationIn>;
    type Output = ConversationEnvelope;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<ConversationEnvelope, ApiError> {
        let uid = input.path.0.uid()?;
        let conversation = service::set_sharing(
            &ctx.db,
            &ctx.bus,
            caller,
            &uid,
            input.body.0.sharing_enabled,
        )
        .await?;
        Ok(ConversationEnvelope { conversation })
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PostMessageIn {
    /// `room` (the only audience this endpoint accepts; `assistant` is a 400).
    #[schema(pattern = "^room$")]
    pub audience: String,
    #[schema(min_length = 1, max_length = 32000)]
    pub content: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageEnvelope {
    pub message: MessageOut,
}

pub struct PostConversationMessage;

impl Operation for PostConversationMessage {
    const NAME: &'static str = "post_conversation_message";
    const DESCRIPTION: &'static str =
        "Post a room message: visible to participants, does not prompt the assistant.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/assistant/conversations/{conversationUid}/messages";
    const STATUS: u16 = 201;
    type Path = Params<ConversationPath>;
    type Query = Nothing;
    type Body = Json<PostMessageIn>;
    type Output = MessageEnvelope;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<MessageEnvelope, ApiError> {
        let uid = input.path.0.uid()?;
        let body = input.body.0;
        let audience = Audience::parse_postable(&body.audience)?;
        let content = Content::parse(body.content)?;
        let message = service::post_message(
            &ctx.db,
            &ctx.writes,
            &ctx.bus,
            caller,
            &uid,
            audience,
            content,
        )
        .await?;
        Ok(MessageEnvelope { message })
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettingsOut {
    /// Sharing of conversations created without an explicit value.
    pub default_sharing_enabled: bool,
    /// The assistant's write tools wait for a participant's confirmation
    /// (default `true`); `false` lets them run at once.
    pub assistant_writes_need_confirmation: bool,
}

impl From<entity::conversation_settings::Model> for SettingsOut {
    fn from(m: entity::conversation_settings::Model) -> Self {
        SettingsOut {
            default_sharing_enabled: m.default_sharing_enabled,
            assistant_writes_need_confirmation: m.assistant_writes_need_confirmation,
        }
    }
}

/// The settings to change: at least one field; the others are kept.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SettingsPatch {
    pub default_sharing_enabled: Option<bool>,
    pub assistant_writes_need_confirmation: Option<bool>,
}

/// Settings are for admins and super-admins of accounts with the assistant.
fn settings_admin(caller: &CallerInfo) -> Result<(), ApiError> {
    if !caller.account.assistant_enabled {
        return Err(ApiError::Forbidden(
            "the assistant is not enabled for this account".into(),
        ));
    }
    if !caller.is_admin() {
        return Err(ApiError::Forbidden(
            "conversation settings need the admin or super-admin role".into(),
        ));
    }
    Ok(())
}

pub struct GetConversationSettings;

impl Operation for GetConversationSettings {
    fn admit(caller: &CallerInfo) -> Result<(), ApiError> {
        settings_admin(caller)
    }

    const NAME: &'static str = "get_conversation_settings";
    const DESCRIPTION: &'static str = "The account's conversation settings.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/assistant/conversation-settings";
    const ERRORS: &'static [(u16, &'static str)] = &[(403, "not an admin or super-admin")];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Nothing;
    type Output = SettingsOut;

    async fn run(ctx: &Ctx, caller: &CallerInfo, _: Input<Self>) -> Result<SettingsOut, ApiError> {
        Ok(service::settings(&ctx.db, caller.account_id())
            .await?
            .into())
    }
}

pub struct UpdateConversationSettings;

impl Operation for UpdateConversationSettings {
    fn admit(caller: &CallerInfo) -> Result<(), ApiError> {
        settings_admin(caller)
    }

    const NAME: &'static str = "update_conversation_settings";
    const DESCRIPTION: &'static str = "Change the sharing default (conversations created before keep their sharing) or whether the assistant's writes need a confirmation.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Patch;
    const PATH: &'static str = "/assistant/conversation-settings";
    const ERRORS: &'static [(u16, &'static str)] =
        &[(403, "not an admin or super-admin, or a read-only key")];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<SettingsPatch>;
    type Output = SettingsOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<SettingsOut, ApiError> {
        let patch = input.body.0;
        if patch.default_sharing_enabled.is_none()
            && patch.assistant_writes_need_confirmation.is_none()
        {
            return Err(ApiError::invalid(
                "defaultSharingEnabled",
                "give defaultSharingEnabled, assistantWritesNeedConfirmation or both",
            ));
        }
        let change = service::SettingsChange {
            default_sharing_enabled: patch.default_sharing_enabled,
            assistant_writes_need_confirmation: patch.assistant_writes_need_confirmation,
        };
        Ok(
            service::update_settings(&ctx.db, caller.account_id(), change)
                .await?
                .into(),
        )
    }
}
