//! The webhook subscription operations, each declared once.

use serde::Deserialize;
use utoipa::ToSchema;

use super::model::{DeliveryOut, SubscriptionCreate, SubscriptionData, SubscriptionOut};
use super::service;
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{
    Access, Ctx, Input, Json, Nothing, Operation, OptionalPage, Page, Paged, Pagination, Params,
    Verb,
};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionPath {
    /// The subscription's id (`wh_...`).
    pub subscription_id: String,
}

pub struct CreateWebhookSubscription;

impl Operation for CreateWebhookSubscription {
    const NAME: &'static str = "create_webhook_subscription";
    const DESCRIPTION: &'static str = "Register an HTTPS endpoint for webhook events (discovery.revision, media_buy.status, notification.created); deliveries are signed with the secret (X-Webhook-Signature, hex HMAC-SHA256 of the raw body), which is never returned.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/webhook-subscriptions";
    const STATUS: u16 = 201;
    const ERRORS: &'static [(u16, &'static str)] = &[(
        400,
        "invalid url, secret or eventTypes (every problem in details.issues)",
    )];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<SubscriptionCreate>;
    type Output = SubscriptionData;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<SubscriptionData, ApiError> {
        let subscription = service::create(ctx, caller, input.body.0).await?;
        Ok(SubscriptionData { subscription })
    }
}

pub struct ListWebhookSubscriptions;

impl Operation for ListWebhookSubscriptions {
    const NAME: &'static str = "list_webhook_subscriptions";
    const DESCRIPTION: &'static str = "The account's webhook subscriptions, newest first: all of them, or a page when take or skip is given.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/webhook-subscriptions";
    type Path = Nothing;
    type Query = OptionalPage<20, 100>;
    type Body = Nothing;
    type Output = Paged<SubscriptionOut>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        service::list(ctx, caller, input.query).await
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}

pub struct DeleteWebhookSubscription;

impl Operation for DeleteWebhookSubscription {
    const NAME: &'static str = "delete_webhook_subscription";
    const DESCRIPTION: &'static str = "Delete one of the account's webhook subscriptions; deliveries to it stop at once. Answers the subscription as it was.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Delete;
    const PATH: &'static str = "/buyer/webhook-subscriptions/{subscriptionId}";
    const ERRORS: &'static [(u16, &'static str)] = &[(404, "unknown, or another account's")];
    type Path = Params<SubscriptionPath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = SubscriptionData;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<SubscriptionData, ApiError> {
        let subscription = service::delete(ctx, caller, &input.path.0.subscription_id).await?;
        Ok(SubscriptionData { subscription })
    }
}

pub struct ListWebhookDeliveries;

impl Operation for ListWebhookDeliveries {
    const NAME: &'static str = "list_webhook_deliveries";
    const DESCRIPTION: &'static str = "A webhook subscription's delivery log, newest first: queued deliveries and every attempt with its time, status code, duration and error class.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/webhook-subscriptions/{subscriptionId}/deliveries";
    const ERRORS: &'static [(u16, &'static str)] = &[(404, "unknown, or another account's")];
    type Path = Params<SubscriptionPath>;
    type Query = Page<20, 100>;
    type Body = Nothing;
    type Output = Paged<DeliveryOut>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        service::deliveries(ctx, caller, &input.path.0.subscription_id, input.query).await
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}
