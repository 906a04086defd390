//! The text message operations, each declared once.

use super::model::{Channel, QueuedMessageData, TextMessageIn};
use super::service;
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{Access, Ctx, Input, Json, Nothing, Operation, Verb};
use crate::types::Permission;

pub struct SendSmsMessage;

impl Operation for SendSmsMessage {
    const NAME: &'static str = "send_sms_message";
    const DESCRIPTION: &'static str = "Queue an SMS from one of the account's lines (needs platform:write). A retry with the same requestId and the same line, destination and text returns the same outboxId with duplicate: true.";
    const ACCESS: Access = Access::Requires(Permission::PlatformWrite);
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/communications/messages";
    const STATUS: u16 = 202;
    const ERRORS: &'static [(u16, &'static str)] = &[
        (
            400,
            "VALIDATION_ERROR, LINE_NOT_MESSAGING, LINE_INACTIVE, RECIPIENT_OPTED_OUT, DESTINATION_NOT_ALLOWED, SENDING_LIMIT_EXCEEDED",
        ),
        (
            404,
            "account not enrolled in agent phone lines, or no such line in the account",
        ),
        (
            409,
            "requestId reused with different details or on the other channel",
        ),
        (503, "cannot safely queue; retry with the same requestId"),
    ];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<TextMessageIn>;
    type Output = QueuedMessageData;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<QueuedMessageData, ApiError> {
        let msg = input.body.0.parse(Channel::Sms)?;
        let message = service::accept(ctx, caller, msg).await?;
        Ok(QueuedMessageData { message })
    }
}

pub struct SendRcsMessage;

impl Operation for SendRcsMessage {
    const NAME: &'static str = "send_rcs_message";
    const DESCRIPTION: &'static str = "Queue a plain-text RCS message from a line with a verified RCS agent (needs platform:write); no SMS fallback. Shares request ids, opt-outs and sending limits with SMS.";
    const ACCESS: Access = Access::Requires(Permission::PlatformWrite);
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/communications/rcs/messages";
    const STATUS: u16 = 202;
    const ERRORS: &'static [(u16, &'static str)] = &[
        (400, "as SMS, plus RCS_AGENT_NOT_VERIFIED"),
        (
            404,
            "account not enrolled in agent phone lines, or no such line in the account",
        ),
        (
            409,
            "requestId reused with different details or on the other channel",
        ),
        (503, "cannot safely queue; retry with the same requestId"),
    ];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<TextMessageIn>;
    type Output = QueuedMessageData;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<QueuedMessageData, ApiError> {
        let msg = input.body.0.parse(Channel::Rcs)?;
        let message = service::accept(ctx, caller, msg).await?;
        Ok(QueuedMessageData { message })
    }
}
