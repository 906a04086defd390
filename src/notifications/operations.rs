//! The notification operations, each declared once (REST, OpenAPI, the
//! `/mcp/buyer` tools and `/mcp/v3 open_notifications` come from here).

use serde::Deserialize;
use utoipa::ToSchema;

use super::model::{
    AcknowledgeIn, AcknowledgeOut, NotificationOut, NotificationsFilter, PreferencesIn,
    PreferencesOut,
};
use super::{preferences, service, topics};
use crate::caller::CallerInfo;
use crate::error::{ApiError, Issues};
use crate::ops::{
    Access, Ctx, Filtered, Input, Json, Nothing, Operation, Paged, Pagination, Params, Verb,
};

/// Most ids acknowledged by one call.
pub const MAX_ACKNOWLEDGE: usize = 200;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationPath {
    /// The notification's id (`ntf_...`).
    pub notification_id: String,
}

pub struct ListNotifications;

impl Operation for ListNotifications {
    const NAME: &'static str = "list_notifications";
    const DESCRIPTION: &'static str = "The caller's notifications, newest first; unread=true for those not read yet, topic for one topic.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/notifications";
    type Path = Nothing;
    type Query = Filtered<NotificationsFilter, 20, 100>;
    type Body = Nothing;
    type Output = Paged<NotificationOut>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let Filtered { page, filter } = input.query;
        if let Some(t) = &filter.topic
            && topics::audience(t).is_none()
        {
            return Err(ApiError::invalid(
                "topic",
                format!(
                    "unknown topic '{t}'; the topics: {}",
                    topics::names().join(", ")
                ),
            ));
        }
        service::list(
            &ctx.db,
            caller,
            page,
            filter.unread.unwrap_or(false),
            filter.topic.as_deref(),
        )
        .await
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}

pub struct GetNotification;

impl Operation for GetNotification {
    const NAME: &'static str = "get_notification";
    const DESCRIPTION: &'static str =
        "One of the caller's notifications; reading it marks it read.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/notifications/{notificationId}";
    const ERRORS: &'static [(u16, &'static str)] = &[(404, "unknown, or another user's")];
    type Path = Params<NotificationPath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = NotificationOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<NotificationOut, ApiError> {
        service::read(&ctx.db, caller, &input.path.0.notification_id).await
    }
}

pub struct AcknowledgeNotifications;

impl Operation for AcknowledgeNotifications {
    const NAME: &'static str = "acknowledge_notifications";
    const DESCRIPTION: &'static str = "Acknowledge (and mark read) some of the caller's notifications ({ids: [...]}) or all of them ({all: true}). Idempotent: answers how many this call acknowledged.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/notifications/acknowledge";
    const ERRORS: &'static [(u16, &'static str)] = &[(
        404,
        "an id is unknown, or another user's (details.missingIds); nothing is acknowledged",
    )];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<AcknowledgeIn>;
    type Output = AcknowledgeOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<AcknowledgeOut, ApiError> {
        let which = which(input.body.0)?;
        let ids = service::acknowledge(&ctx.db, caller, which).await?;
        Ok(AcknowledgeOut {
            acknowledged: ids.len() as u64,
            ids,
        })
    }
}

/// `ids` (1 to 200, each named once) or `all: true`, not both.
pub fn which(body: AcknowledgeIn) -> Result<service::Which, ApiError> {
    match (body.ids, body.all) {
        (Some(_), Some(_)) => Err(ApiError::invalid("all", "send ids or all, not both")),
        (None, Some(true)) => Ok(service::Which::All),
        (None, Some(false)) => Err(ApiError::invalid(
            "all",
            "must be true (or send ids instead)",
        )),
        (None, None) => Err(ApiError::invalid("ids", "send ids or all: true")),
        (Some(ids), None) => {
            let mut issues = Issues::default();
            if ids.is_empty() || ids.len() > MAX_ACKNOWLEDGE {
                issues.add(
                    "ids",
                    format!("must hold 1 to {MAX_ACKNOWLEDGE} notification ids"),
                );
            }
            let mut seen = Vec::with_capacity(ids.len());
            for (i, id) in ids.into_iter().enumerate() {
                if id.trim().is_empty() || id.len() > 64 {
                    issues.add(format!("ids[{i}]"), "must be a notification id (ntf_...)");
                } else if !seen.contains(&id) {
                    seen.push(id);
                }
            }
            issues.into_result()?;
            Ok(service::Which::Ids(seen))
        }
    }
}

pub struct GetNotificationPreferences;

impl Operation for GetNotificationPreferences {
    const NAME: &'static str = "get_notification_preferences";
    const DESCRIPTION: &'static str = "The caller's delivery preferences: for every topic, its audience and whether each channel (console, webhook, email) is on, and the e-mail address recorded.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/notifications/preferences";
    type Path = Nothing;
    type Query = Nothing;
    type Body = Nothing;
    type Output = PreferencesOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        _: Input<Self>,
    ) -> Result<PreferencesOut, ApiError> {
        preferences::get(&ctx.db, caller).await
    }
}

pub struct UpdateNotificationPreferences;

impl Operation for UpdateNotificationPreferences {
    const NAME: &'static str = "update_notification_preferences";
    const DESCRIPTION: &'static str = "Change the caller's delivery preferences: channels per topic (those left out stay) and the e-mail address (null clears it). Answers the preferences as they are now.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Patch;
    const PATH: &'static str = "/notifications/preferences";
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<PreferencesIn>;
    type Output = PreferencesOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<PreferencesOut, ApiError> {
        preferences::update(&ctx.db, caller, input.body.0).await
    }
}
