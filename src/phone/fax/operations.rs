//! The fax operations, each declared once.

use serde::Deserialize;
use utoipa::ToSchema;

use super::model::{FaxIn, FaxResultData, FaxStatusData};
use super::service;
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{Access, Ctx, Input, Json, Nothing, Operation, Params, Verb};
use crate::types::Permission;

pub struct SendFax;

impl Operation for SendFax {
    const NAME: &'static str = "send_fax";
    const DESCRIPTION: &'static str = "Send a PDF fax from a fax line (needs platform:write and access to the line's customer). The carrier fetches the PDF from mediaUrl itself; mediaSha256 binds it. The same requestId with the same line, destination and digest returns the earlier result with duplicate: true.";
    const ACCESS: Access = Access::Requires(Permission::PlatformWrite);
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/communications/faxes";
    const STATUS: u16 = 202;
    const ERRORS: &'static [(u16, &'static str)] = &[
        (
            400,
            "VALIDATION_ERROR (a field, a number not E.164, a URL not HTTPS), LINE_NOT_FAX, CARRIER_REJECTED",
        ),
        (
            403,
            "without platform:write, or without access to the line's customer",
        ),
        (
            404,
            "account not enrolled in agent phone lines, no such line, rollout disabled or line not active for the customer",
        ),
        (
            409,
            "requestId reused with different input, or an earlier submission is unresolved",
        ),
        (
            503,
            "submission_unknown: the carrier may have accepted (do not resubmit under a new requestId); SERVICE_UNAVAILABLE: nothing was sent, retry with the same requestId",
        ),
    ];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<FaxIn>;
    type Output = FaxResultData;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<FaxResultData, ApiError> {
        let fax = input.body.0.parse(ctx.config.url_policy())?;
        let fax = service::send(ctx, caller, fax).await?;
        Ok(FaxResultData { fax })
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FaxPath {
    /// The carrier's fax id, as `send_fax` answered it.
    pub provider_fax_id: String,
}

pub struct GetFax;

impl Operation for GetFax {
    const NAME: &'static str = "get_fax";
    const DESCRIPTION: &'static str = "A sent fax's status as the carrier reported it: queued, media.processed, sending, delivered or failed (with the carrier's reason).";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/communications/faxes/{providerFaxId}";
    type Path = Params<FaxPath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = FaxStatusData;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<FaxStatusData, ApiError> {
        let id = input.path.0.provider_fax_id;
        if id.is_empty() || id.len() > 100 {
            return Err(ApiError::invalid(
                "providerFaxId",
                "must be 1 to 100 characters",
            ));
        }
        let fax = service::status(&ctx.db, caller, &id).await?;
        Ok(FaxStatusData { fax })
    }
}
