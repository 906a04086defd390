//! Human feedback: a person's rating (1 to 5) of a product, a media buy or
//! a seller's proposal, with an optional comment and tags, kept per account
//! and advertiser (the subject's). Stored here; not relayed to sellers.

use chrono::{DateTime, Utc};
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use entity::{human_feedback, media_buy};

use crate::caller::CallerInfo;
use crate::error::{ApiError, Issues};
use crate::ops::{Access, Ctx, Filtered, Input, Json, Nothing, Operation, Paged, Pagination, Verb};

pub const SUBJECT_TYPES: &[&str] = &["product", "media_buy", "proposal"];
pub const MAX_COMMENT: usize = 2000;
pub const MAX_TAGS: usize = 10;
pub const MAX_TAG: usize = 40;

/// What the feedback is about.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Subject {
    /// `product`, `media_buy` or `proposal`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The product's or proposal's id (the seller's), or the media buy's.
    pub id: String,
    /// The discovery session holding the product or proposal (required
    /// for those; not for a media buy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discovery_id: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FeedbackIn {
    pub subject: Subject,
    /// 1 (poor) to 5 (excellent).
    pub rating: i64,
    /// Up to 2,000 characters.
    pub comment: Option<String>,
    /// Up to 10 tags, each 1 to 40 of `a-z 0-9 _ -` (e.g. `brand_safety`).
    pub tags: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackOut {
    pub feedback_id: String,
    /// The subject's advertiser.
    pub advertiser_id: String,
    pub subject: Subject,
    /// A media buy's campaign.
    pub campaign_id: Option<String>,
    pub rating: i32,
    pub comment: Option<String>,
    pub tags: Vec<String>,
    /// The user who gave it.
    pub created_by: i64,
    pub created_at: DateTime<Utc>,
}

impl From<human_feedback::Model> for FeedbackOut {
    fn from(r: human_feedback::Model) -> Self {
        FeedbackOut {
            feedback_id: r.id,
            advertiser_id: r.advertiser_id,
            subject: Subject {
                kind: r.subject_type,
                id: r.subject_id,
                discovery_id: r.discovery_id,
            },
            campaign_id: r.campaign_id,
            rating: r.rating,
            comment: r.comment,
            tags: serde_json::from_str(&r.tags).unwrap_or_default(),
            created_by: r.created_by,
            created_at: r.created_at,
        }
    }
}

#[derive(Debug, Default, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackFilter {
    /// Only this advertiser's feedback (404 when not the account's).
    pub advertiser_id: Option<String>,
    /// `product`, `media_buy` or `proposal`.
    pub subject_type: Option<String>,
    /// Only feedback on this subject id.
    pub subject_id: Option<String>,
}

pub struct ListHumanFeedback;

impl Operation for ListHumanFeedback {
    const NAME: &'static str = "list_human_feedback";
    const DESCRIPTION: &'static str = "The account's human feedback on products, media buys and proposals, newest first; filter by advertiserId, subjectType (product, media_buy, proposal) and subjectId.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/human-feedback";
    const ERRORS: &'static [(u16, &'static str)] =
        &[(404, "advertiserId names no advertiser of the account")];
    type Path = Nothing;
    type Query = Filtered<FeedbackFilter, 20, 100>;
    type Body = Nothing;
    type Output = Paged<FeedbackOut>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let Filtered { page, filter } = input.query;
        if let Some(t) = &filter.subject_type
            && !SUBJECT_TYPES.contains(&t.as_str())
        {
            return Err(ApiError::invalid(
                "subjectType",
                "must be product, media_buy or proposal",
            ));
        }
        let account = caller.account_id();
        let mut select =
            human_feedback::Entity::find().filter(human_feedback::Column::AccountId.eq(account));
        if let Some(a) = &filter.advertiser_id {
            super::own_advertiser(&ctx.db, account, a).await?;
            select = select.filter(human_feedback::Column::AdvertiserId.eq(a.as_str()));
        }
        if let Some(t) = &filter.subject_type {
            select = select.filter(human_feedback::Column::SubjectType.eq(t.as_str()));
        }
        if let Some(s) = &filter.subject_id {
            select = select.filter(human_feedback::Column::SubjectId.eq(s.as_str()));
        }
        let select = select
            .order_by_desc(human_feedback::Column::CreatedAt)
            .order_by_desc(human_feedback::Column::Id);
        Ok(page.fetch(&ctx.db, select, FeedbackOut::from).await?)
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}

pub struct GiveHumanFeedback;

impl Operation for GiveHumanFeedback {
    const NAME: &'static str = "give_human_feedback";
    const DESCRIPTION: &'static str = "Rate a product or a seller's proposal (subject {type, id, discoveryId}: the discovery session holding it) or a media buy (subject {type: media_buy, id}) from 1 to 5, with an optional comment and tags; kept under the subject's advertiser.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/human-feedback";
    const STATUS: u16 = 201;
    const ERRORS: &'static [(u16, &'static str)] = &[(
        404,
        "the media buy, discovery session, or the product or proposal in it, is not the account's",
    )];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<FeedbackIn>;
    type Output = FeedbackOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<FeedbackOut, ApiError> {
        let b = input.body.0;
        let (comment, tags) = validate(&b)?;
        let s = &b.subject;
        let (advertiser, discovery, campaign) = match s.kind.as_str() {
            "media_buy" => {
                let buy = media_buy::Entity::find_by_id(s.id.clone())
                    .filter(media_buy::Column::AccountId.eq(caller.account_id()))
                    .one(&ctx.db)
                    .await?
                    .ok_or_else(|| ApiError::not_found("media buy"))?;
                (buy.advertiser_id, None, Some(buy.campaign_id))
            }
            kind => {
                let raw = s.discovery_id.as_deref().unwrap_or_default();
                let session =
                    crate::discovery::operations::visible_session(ctx, caller, raw).await?;
                let found = if kind == "product" {
                    crate::discovery::selection::products_of(ctx, &session.id)
                        .await?
                        .iter()
                        .any(|(_, p)| p.product_id == s.id)
                } else {
                    crate::discovery::selection::proposals_of(ctx, &session.id)
                        .await?
                        .iter()
                        .any(|(_, p)| {
                            p.get("proposal_id").and_then(|v| v.as_str()) == Some(s.id.as_str())
                        })
                };
                if !found {
                    return Err(ApiError::not_found(kind));
                }
                (session.advertiser_id, Some(session.id), None)
            }
        };
        let row = human_feedback::ActiveModel {
            id: Set(format!("hfb_{}", uuid::Uuid::new_v4().simple())),
            account_id: Set(caller.account_id().to_string()),
            advertiser_id: Set(advertiser),
            subject_type: Set(s.kind.clone()),
            subject_id: Set(s.id.clone()),
            discovery_id: Set(discovery),
            campaign_id: Set(campaign),
            rating: Set(i32::try_from(b.rating).unwrap_or_default()),
            comment: Set(comment),
            tags: Set(serde_json::to_string(&tags).map_err(ApiError::internal)?),
            created_by: Set(caller.user.id),
            created_at: Set(Utc::now()),
        }
        .insert(&ctx.db)
        .await?;
        Ok(row.into())
    }
}

/// Every problem of the body at once; the comment (trimmed, `None` when
/// blank) and the tags (deduplicated, in order).
fn validate(b: &FeedbackIn) -> Result<(Option<String>, Vec<String>), ApiError> {
    let mut issues = Issues::default();
    let s = &b.subject;
    let known = SUBJECT_TYPES.contains(&s.kind.as_str());
    if !known {
        issues.add("subject.type", "must be product, media_buy or proposal");
    }
    if s.id.trim().is_empty() || s.id.len() > 255 {
        issues.add("subject.id", "must be 1 to 255 characters");
    }
    match (s.kind.as_str(), &s.discovery_id) {
        ("media_buy", Some(_)) => {
            issues.add("subject.discoveryId", "is only for a product or a proposal")
        }
        ("product" | "proposal", None) => issues.add(
            "subject.discoveryId",
            "is required for a product or a proposal: the discovery session holding it",
        ),
        _ => {}
    }
    if !(1..=5).contains(&b.rating) {
        issues.add("rating", "must be an integer from 1 to 5");
    }
    let comment = b
        .comment
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    if comment
        .as_deref()
        .is_some_and(|c| c.chars().count() > MAX_COMMENT)
    {
        issues.add(
            "comment",
            format!("must be at most {MAX_COMMENT} characters"),
        );
    }
    let mut tags: Vec<String> = Vec::new();
    let given = b.tags.as_deref().unwrap_or_default();
    if given.len() > MAX_TAGS {
        issues.add("tags", format!("must hold at most {MAX_TAGS} tags"));
    }
    for (i, t) in given.iter().enumerate() {
        let ok = !t.is_empty()
            && t.len() <= MAX_TAG
            && t.bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-');
        if !ok {
            issues.add(
                format!("tags[{i}]"),
                format!("must be 1 to {MAX_TAG} of a-z, 0-9, _ and -"),
            );
        } else if !tags.contains(t) {
            tags.push(t.clone());
        }
    }
    issues.into_result()?;
    Ok((comment, tags))
}
