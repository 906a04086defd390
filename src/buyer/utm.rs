//! Utm parameters on click URLs and packages: the advertiser's `utmConfig`
//! with the campaign's overriding it per key, the macros (`{CAMPAIGN_ID}`,
//! `{MEDIA_BUY_ID}`, `{PACKAGE_ID}`, `{CREATIVE_ID}`) resolved, appended to
//! a landing URL. Used by media-buy packages and creative click URLs alike,
//! so both carry the same parameters.

use url::Url;

use super::advertisers::model::{UtmParam, default_utm_config};
use super::from_json;

/// The ids the macros resolve to; `None` leaves that macro as it is (a
/// package has no creative yet).
#[derive(Debug, Clone, Copy, Default)]
pub struct Ids<'a> {
    pub campaign_id: Option<&'a str>,
    pub media_buy_id: Option<&'a str>,
    pub package_id: Option<&'a str>,
    pub creative_id: Option<&'a str>,
}

/// The parameters that apply: the advertiser's (stored JSON: an advertiser
/// created without `utmConfig` stored the spec's defaults, and `[]` is one
/// that cleared them, so it has none; a value that cannot be read gives the
/// defaults), each replaced by the campaign's parameter of the same key,
/// then the campaign's other keys, in their order.
pub fn effective(advertiser: &str, campaign: Option<&str>) -> Vec<UtmParam> {
    let mut params: Vec<UtmParam> =
        serde_json::from_str(advertiser).unwrap_or_else(|_| default_utm_config());
    let overrides: Vec<UtmParam> = campaign.map(from_json).unwrap_or_default();
    for o in overrides {
        match params.iter_mut().find(|p| p.param_key == o.param_key) {
            Some(p) => p.param_value = o.param_value,
            None => params.push(o),
        }
    }
    params
}

/// Each parameter with its macros resolved.
pub fn resolve(params: &[UtmParam], ids: Ids<'_>) -> Vec<(String, String)> {
    params
        .iter()
        .map(|p| {
            let mut v = p.param_value.clone();
            for (macro_, id) in [
                ("{CAMPAIGN_ID}", ids.campaign_id),
                ("{MEDIA_BUY_ID}", ids.media_buy_id),
                ("{PACKAGE_ID}", ids.package_id),
                ("{CREATIVE_ID}", ids.creative_id),
            ] {
                if let Some(id) = id {
                    v = v.replace(macro_, id);
                }
            }
            (p.param_key.clone(), v)
        })
        .collect()
}

/// `landing` with the parameters appended to its query. A key the URL
/// already has is left as the URL has it (the creative's own URL is the
/// more specific choice); the fragment stays last. Values are
/// form-encoded, except the braces of a macro left unresolved (an AdCP
/// universal macro such as `{CACHEBUSTER}` that the seller fills in must
/// not be pre-encoded).
pub fn click_url(landing: &str, params: &[(String, String)]) -> Result<String, url::ParseError> {
    let mut u = Url::parse(landing)?;
    let present: Vec<String> = u.query_pairs().map(|(k, _)| k.into_owned()).collect();
    let mut query = u.query().unwrap_or_default().to_string();
    for (k, v) in params {
        if present.iter().any(|p| p == k) {
            continue;
        }
        if !query.is_empty() {
            query.push('&');
        }
        query.push_str(&encode(k));
        query.push('=');
        query.push_str(&encode(v));
    }
    u.set_query((!query.is_empty()).then_some(query.as_str()));
    Ok(u.to_string())
}

fn encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes())
        .collect::<String>()
        .replace("%7B", "{")
        .replace("%7D", "}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn p(k: &str, v: &str) -> UtmParam {
        UtmParam {
            param_key: k.into(),
            param_value: v.into(),
        }
    }

    fn json(params: &[UtmParam]) -> String {
        serde_json::to_string(params).unwrap()
    }

    const IDS: Ids<'static> = Ids {
        campaign_id: Some("cmp_1"),
        media_buy_id: Some("mb_2"),
        package_id: Some("pkg_2"),
        creative_id: Some("cr_3"),
    };

    #[test]
    fn the_defaults_resolve_every_macro_and_a_cleared_config_has_none() {
        let pairs = resolve(&effective(&json(&default_utm_config()), None), IDS);
        assert_eq!(
            pairs,
            [
                ("utm_source", "agentic-api"),
                ("utm_medium", "agentic"),
                ("utm_campaign", "cmp_1"),
                ("utm_content", "cr_3"),
                ("utm_media_buy", "mb_2"),
                ("utm_package", "pkg_2"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
        );
        // `[]` clears (the spec): none, unless the campaign names some.
        assert!(effective("[]", None).is_empty());
        let cmp = json(&[p("ref", "{CREATIVE_ID}")]);
        assert_eq!(
            resolve(&effective("[]", Some(&cmp)), IDS),
            [("ref".to_string(), "cr_3".to_string())]
        );
        assert_eq!(effective("", None), default_utm_config());
    }

    #[test]
    fn the_campaign_overrides_per_key_and_adds_its_own_keys() {
        let adv = json(&[p("utm_source", "adv"), p("utm_medium", "agentic")]);
        let cmp = json(&[p("utm_source", "spring-{CAMPAIGN_ID}"), p("ref", "x")]);
        let pairs = resolve(&effective(&adv, Some(&cmp)), IDS);
        assert_eq!(
            pairs,
            [
                ("utm_source", "spring-cmp_1"),
                ("utm_medium", "agentic"),
                ("ref", "x"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
        );
        // No campaign config, or an empty one: the advertiser's alone.
        assert_eq!(effective(&adv, Some("[]")).len(), 2);
        assert_eq!(effective(&adv, None).len(), 2);
    }

    #[test]
    fn a_missing_id_leaves_its_macro() {
        let ids = Ids {
            creative_id: None,
            ..IDS
        };
        let pairs = resolve(&[p("c", "{CREATIVE_ID}-{MEDIA_BUY_ID}")], ids);
        assert_eq!(pairs[0].1, "{CREATIVE_ID}-mb_2");
    }

    #[test]
    fn click_urls_keep_their_own_parameters_and_fragment() {
        let pairs: Vec<(String, String)> = [
            ("utm_source", "agentic"),
            ("utm_campaign", "a b&c"),
            ("cb", "{CACHEBUSTER}"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .to_vec();
        assert_eq!(
            click_url("https://shop.example/p?utm_source=mail&x=1#top", &pairs).unwrap(),
            "https://shop.example/p?utm_source=mail&x=1&utm_campaign=a+b%26c&cb={CACHEBUSTER}#top"
        );
        assert_eq!(
            click_url("https://shop.example", &pairs[..1]).unwrap(),
            "https://shop.example/?utm_source=agentic"
        );
        assert_eq!(
            click_url("https://shop.example/", &[]).unwrap(),
            "https://shop.example/"
        );
        assert!(click_url("not a url", &pairs).is_err());
    }
}
