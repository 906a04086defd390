//! Targeting: every `constraints` rule with a passing and a failing case,
//! the postal pairing table row by row, the deprecated aliases, every issue
//! reported at once with its path, name resolution, label listing, auth.

use actix_web::http::Method;
use serde_json::{Value, json};

use crate::helpers::*;

const VALIDATE: &str = "/api/v2/buyer/targeting/validate";

fn dims(system: &str, rest: &str) -> String {
    format!("/api/v2/buyer/targeting/dimensions/{system}/{rest}")
}

async fn validate(app: &TestApp, t: &Tenant, constraints: Value) -> Resp {
    app.post(VALIDATE, &t.key, &json!({ "constraints": constraints }))
        .await
}

/// A body sent as it is, bytes and all.
async fn validate_raw(app: &TestApp, t: &Tenant, body: Vec<u8>) -> Resp {
    app.send_raw(
        Method::POST,
        VALIDATE,
        Some(&t.key),
        Some("application/json"),
        body,
    )
    .await
}

/// Valid: returns the normalised constraints.
async fn accepted(app: &TestApp, t: &Tenant, constraints: Value) -> Value {
    let res = validate(app, t, constraints.clone()).await;
    assert_eq!(res.status, 200, "{constraints} -> {}", res.body);
    assert_eq!(res.data()["valid"], json!(true));
    res.data()["constraints"].clone()
}

/// Invalid: every issue path.
async fn rejected(app: &TestApp, t: &Tenant, constraints: Value) -> Vec<String> {
    let res = validate(app, t, constraints.clone()).await;
    res.assert_error(400, "VALIDATION_ERROR");
    res.body["error"]["details"]["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap().to_string())
        .collect()
}

#[track_caller]
fn has(paths: &[String], want: &str) {
    assert!(
        paths.iter().any(|p| p == want),
        "expected an issue at {want}, got {paths:?}"
    );
}

#[actix_web::test]
async fn every_simple_field_has_a_passing_and_a_failing_case() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let cases: &[(&str, Value, Value, Value)] = &[
        // (field, good input, normalised, bad input)
        (
            "channels",
            json!(["display", "ctv", "display"]),
            json!(["display", "ctv"]),
            json!(["tv"]),
        ),
        (
            "geo_countries",
            json!(["us", "GB"]),
            json!(["US", "GB"]),
            json!(["XX"]),
        ),
        (
            "geo_countries_exclude",
            json!(["fr"]),
            json!(["FR"]),
            json!(["USA"]),
        ),
        (
            "geo_regions",
            json!(["us-ca", "GB-ENG"]),
            json!(["US-CA", "GB-ENG"]),
            json!(["US-XX"]),
        ),
        (
            "geo_regions_exclude",
            json!(["US-NY"]),
            json!(["US-NY"]),
            json!(["CA"]),
        ),
        (
            "language",
            json!(["EN", "fr"]),
            json!(["en", "fr"]),
            json!(["eng"]),
        ),
        (
            "device_type",
            json!(["mobile", "ctv"]),
            json!(["mobile", "ctv"]),
            json!(["phone"]),
        ),
        (
            "device_type_exclude",
            json!(["dooh"]),
            json!(["dooh"]),
            json!(["watch"]),
        ),
        (
            "device_platform",
            json!(["ios", "roku_os"]),
            json!(["ios", "roku_os"]),
            json!(["symbian"]),
        ),
    ];
    for (field, good, normalised, bad) in cases {
        let c = accepted(&app, &t, json!({ *field: good })).await;
        assert_eq!(&c[*field], normalised, "{field}");
        let paths = rejected(&app, &t, json!({ *field: bad })).await;
        has(&paths, &format!("constraints.{field}[0]"));
        // Not a list of strings.
        let paths = rejected(&app, &t, json!({ *field: "x" })).await;
        has(&paths, &format!("constraints.{field}"));
        let paths = rejected(&app, &t, json!({ *field: [7] })).await;
        has(&paths, &format!("constraints.{field}[0]"));
    }
}

#[actix_web::test]
async fn countries_is_a_deprecated_alias_of_geo_countries() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let c = accepted(&app, &t, json!({"countries": ["us", "ca"]})).await;
    assert_eq!(c["geo_countries"], json!(["US", "CA"]));
    assert!(c.get("countries").is_none(), "{c}");
    let paths = rejected(&app, &t, json!({"countries": ["XX"]})).await;
    has(&paths, "constraints.countries[0]");
    let paths = rejected(
        &app,
        &t,
        json!({"countries": ["US"], "geo_countries": ["US"]}),
    )
    .await;
    has(&paths, "constraints.countries");
}

#[actix_web::test]
async fn unknown_keys_are_rejected_at_every_level() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let paths = rejected(
        &app,
        &t,
        json!({
            "geo_country": ["US"],
            "geo_metros": [{"system": "nielsen_dma", "values": ["501"], "names": []}],
            "geo_postal_areas": [{"country": "US", "system": "zip", "values": ["94105"], "radius": 5}],
        }),
    )
    .await;
    has(&paths, "constraints.geo_country");
    has(&paths, "constraints.geo_metros[0].names");
    has(&paths, "constraints.geo_postal_areas[0].radius");
    // Outside `constraints` too.
    let res = app
        .post(VALIDATE, &t.key, &json!({"constraints": {}, "extra": 1}))
        .await;
    res.assert_error(400, "VALIDATION_ERROR");
    let res = app
        .post(VALIDATE, &t.key, &json!({"constraints": []}))
        .await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(res.body["error"]["field"], json!("constraints"));
}

#[actix_web::test]
async fn metros_need_real_dma_codes_as_numeric_strings() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let c = accepted(
        &app,
        &t,
        json!({
            "geo_metros": [
                {"system": "nielsen_dma", "values": ["501", " 803\t"]},
                {"system": "nielsen_dma", "values": ["501", "602"]},
            ],
            "geo_metros_exclude": [{"system": "nielsen_dma", "values": ["798"]}],
        }),
    )
    .await;
    assert_eq!(
        c["geo_metros"],
        json!([{"system": "nielsen_dma", "values": ["501", "803", "602"]}])
    );
    let metros = json!({
        "geo_metros": [{"system": "nielsen_dma", "values": ["501"]}],
        "geo_metros_exclude": [{"system": "nielsen_dma", "values": ["798"]}],
    });
    // Labels when asked for, as on campaigns.
    let res = validate(&app, &t, metros.clone()).await;
    assert_eq!(res.status, 200);
    assert!(res.data().get("geo_metro_names").is_none(), "{}", res.body);
    let res = app
        .post(
            &format!("{VALIDATE}?fields=geo_metro_names"),
            &t.key,
            &json!({ "constraints": metros }),
        )
        .await;
    assert_eq!(
        res.data()["geo_metro_names"],
        json!([{"system": "nielsen_dma", "code": "501", "name": "New York, NY"}])
    );
    assert_eq!(
        res.data()["geo_metro_names_exclude"],
        json!([{"system": "nielsen_dma", "code": "798", "name": "Glendive, MT"}])
    );
    let paths = rejected(
        &app,
        &t,
        json!({
            "geo_metros": [
                {"system": "nielsen_dma", "values": [501, "New York", "999", "501", "5 01", "", " ", "1234567890123456"]},
                {"system": "msa", "values": ["35620"]},
                {"values": ["501"]},
                {"system": "nielsen_dma", "values": []},
                "501",
            ],
            "geo_metros_exclude": [{"system": "nielsen_dma"}],
        }),
    )
    .await;
    has(&paths, "constraints.geo_metros[0].values[0]");
    has(&paths, "constraints.geo_metros[0].values[1]");
    has(&paths, "constraints.geo_metros[0].values[2]");
    for i in 4..=7 {
        has(&paths, &format!("constraints.geo_metros[0].values[{i}]"));
    }
    has(&paths, "constraints.geo_metros[1].system");
    has(&paths, "constraints.geo_metros[2].system");
    has(&paths, "constraints.geo_metros[3].values");
    has(&paths, "constraints.geo_metros[4]");
    has(&paths, "constraints.geo_metros_exclude[0].values");
    assert!(!paths.iter().any(|p| p.ends_with("values[3]")), "{paths:?}");
}

/// `(system, valid code, its canonical form, an invalid code)`.
type SystemCase = (&'static str, &'static str, &'static str, &'static str);
/// `(country, its systems, a system it does not take)`.
type PairingRow = (&'static str, &'static [SystemCase], &'static str);

/// The pairing table, row by row: (country, right systems with a valid and
/// an invalid code each, a wrong system).
#[actix_web::test]
async fn postal_pairing_table_row_by_row() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let rows: &[PairingRow] = &[
        // (country, [(system, good, canonical, bad)], wrong system)
        (
            "US",
            &[
                ("zip", "94105", "94105", "9410"),
                ("zip_plus_four", "941051234", "94105-1234", "94105-123"),
            ],
            "postal_code",
        ),
        (
            "GB",
            &[
                ("outward", "sw1a", "SW1A", "SW1A1AA"),
                ("full", "sw1a1aa", "SW1A 1AA", "SW1A"),
            ],
            "zip",
        ),
        (
            "CA",
            &[
                ("fsa", "k1a", "K1A", "K1A0B1"),
                ("full", "K1A0B1", "K1A 0B1", "K1A 0B"),
            ],
            "postal_code",
        ),
        ("DE", &[("plz", "10115", "10115", "1011")], "postal_code"),
        ("CH", &[("plz", "8001", "8001", "80010")], "postal_code"),
        ("AT", &[("plz", "1010", "1010", "10100")], "zip"),
        (
            "FR",
            &[("code_postal", "75001", "75001", "7500")],
            "postal_code",
        ),
        (
            "AU",
            &[("postcode", "2000", "2000", "20000")],
            "postal_code",
        ),
        (
            "BR",
            &[("cep", "01310100", "01310-100", "0131-0100")],
            "postal_code",
        ),
        (
            "IN",
            &[("pin", "110001", "110001", "011000")],
            "postal_code",
        ),
        ("ZA", &[("postal_code", "0001", "0001", "00_01")], "zip"),
        (
            "NL",
            &[("postal_code", "1012 ab", "1012 AB", "1012-AB-1234")],
            "plz",
        ),
    ];
    for (country, systems, wrong) in rows {
        for (system, good, canonical, bad) in *systems {
            let c = accepted(
                &app,
                &t,
                json!({"geo_postal_areas": [{"country": country, "system": system, "values": [good]}]}),
            )
            .await;
            assert_eq!(
                c["geo_postal_areas"][0],
                json!({"country": country, "system": system, "values": [canonical]}),
                "{country} {system}"
            );
            let paths = rejected(
                &app,
                &t,
                json!({"geo_postal_areas_exclude": [{"country": country, "system": system, "values": [good, bad]}]}),
            )
            .await;
            assert_eq!(
                paths,
                vec!["constraints.geo_postal_areas_exclude[0].values[1]".to_string()],
                "{country} {system} {bad}"
            );
        }
        let paths = rejected(
            &app,
            &t,
            json!({"geo_postal_areas": [{"country": country, "system": wrong, "values": ["12345"]}]}),
        )
        .await;
        assert_eq!(
            paths,
            vec!["constraints.geo_postal_areas[0].system".to_string()],
            "{country} with {wrong}"
        );
    }
    // The country must be real.
    let paths = rejected(
        &app,
        &t,
        json!({"geo_postal_areas": [{"country": "XX", "system": "postal_code", "values": ["1"]}]}),
    )
    .await;
    has(&paths, "constraints.geo_postal_areas[0].country");
}

#[actix_web::test]
async fn legacy_postal_areas_only_for_deprecated_fused_systems() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let c = accepted(
        &app,
        &t,
        json!({"geo_postal_areas": [
            {"system": "us_zip", "values": ["94105"]},
            {"system": "gb_outward", "values": ["M1"]},
            {"system": "ca_fsa", "values": ["K1A"]},
            {"system": "de_plz", "values": ["10115"]},
            {"system": "fr_code_postal", "values": ["75001"]},
            {"system": "au_postcode", "values": ["2000"]},
        ]}),
    )
    .await;
    assert_eq!(
        c["geo_postal_areas"],
        json!([
            {"country": "US", "system": "zip", "values": ["94105"]},
            {"country": "GB", "system": "outward", "values": ["M1"]},
            {"country": "CA", "system": "fsa", "values": ["K1A"]},
            {"country": "DE", "system": "plz", "values": ["10115"]},
            {"country": "FR", "system": "code_postal", "values": ["75001"]},
            {"country": "AU", "system": "postcode", "values": ["2000"]},
        ])
    );
    // A legacy name's format is still checked.
    let paths = rejected(
        &app,
        &t,
        json!({"geo_postal_areas": [{"system": "us_zip", "values": ["ABCDE"]}]}),
    )
    .await;
    has(&paths, "constraints.geo_postal_areas[0].values[0]");
    // A plain system needs its country; a fused one is not a system of a country.
    let paths = rejected(
        &app,
        &t,
        json!({"geo_postal_areas": [
            {"system": "zip", "values": ["94105"]},
            {"country": "US", "system": "us_zip", "values": ["94105"]},
        ]}),
    )
    .await;
    has(&paths, "constraints.geo_postal_areas[0].country");
    has(&paths, "constraints.geo_postal_areas[1].system");
}

#[actix_web::test]
async fn every_problem_is_reported_at_once_with_its_path() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let res = validate(
        &app,
        &t,
        json!({
            "channels": ["display", "telepathy"],
            "geo_countries": ["US", "ZZ"],
            "geo_regions": ["US-CA", "US-ZZ"],
            "geo_postal_areas": [
                {"country": "US", "system": "zip", "values": ["94105"]},
                {"country": "US", "system": "zip", "values": ["10001"]},
                {"country": "US", "system": "zip", "values": ["94105", "1", "2", "3", "4", "ABCDE"]},
            ],
            "geo_metros": [{"system": "nielsen_dma", "values": ["501", "000"]}],
            "language": ["en", "xx"],
            "device_type": ["phone"],
            "surprise": true,
        }),
    )
    .await;
    res.assert_error(400, "VALIDATION_ERROR");
    let issues = res.body["error"]["details"]["issues"].as_array().unwrap();
    let paths: Vec<String> = issues
        .iter()
        .map(|i| i["path"].as_str().unwrap().to_string())
        .collect();
    for want in [
        "constraints.surprise",
        "constraints.channels[1]",
        "constraints.geo_countries[1]",
        "constraints.geo_regions[1]",
        "constraints.geo_postal_areas[2].values[1]",
        "constraints.geo_postal_areas[2].values[5]",
        "constraints.geo_metros[0].values[1]",
        "constraints.language[1]",
        "constraints.device_type[0]",
    ] {
        has(&paths, want);
    }
    assert_eq!(paths.len(), 12, "{paths:?}");
    assert!(
        issues
            .iter()
            .all(|i| i["message"].as_str().is_some_and(|m| !m.is_empty()))
    );
}

#[actix_web::test]
async fn validation_returns_the_effective_targeting() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let res = validate(
        &app,
        &t,
        json!({
            "geo_countries": ["US", "CA"],
            "geo_countries_exclude": ["CA"],
            "geo_regions": ["US-CA", "CA-ON"],
            "device_type": ["mobile"],
            "device_type_exclude": ["mobile"],
        }),
    )
    .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let e = &res.data()["effective"];
    assert_eq!(e["geo_countries"], json!(["US"]));
    assert_eq!(e["geo_countries_exclude"], json!(["CA"]));
    assert_eq!(e["geo_regions"], json!(["US-CA"]));
    assert_eq!(e["device_type"], json!([]));
    assert_eq!(e["unsatisfiable"], json!(["device_type"]));
    assert!(e.get("channels").is_none(), "unrestricted: {e}");
}

/// The usual body is read by the direct reader; one with an escape, odd
/// spacing or an unknown key goes through serde. Both give one answer.
#[actix_web::test]
async fn plain_escaped_and_spaced_bodies_are_read_alike() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let plain = r#"{"constraints":{"geo_countries":["US","ca"],"geo_metros":[{"system":"nielsen_dma","values":["501","803"]}],"geo_postal_areas":[{"country":"US","system":"zip","values":["94105","10001"]}],"language":["en"]}}"#;
    let escaped = plain
        .replace(r#""US""#, r#""\u0055S""#)
        .replace("94105", r"9410\u0035");
    let spaced = plain.replace(',', " ,\n\t").replace(':', " : ");
    let mut answers = vec![];
    for body in [plain.to_string(), escaped, spaced] {
        let res = validate_raw(&app, &t, body.clone().into_bytes()).await;
        assert_eq!(res.status, 200, "{body} -> {}", res.body);
        answers.push(res.data().clone());
    }
    assert_eq!(
        answers[0]["constraints"]["geo_countries"],
        json!(["US", "CA"])
    );
    assert_eq!(answers[0], answers[1]);
    assert_eq!(answers[0], answers[2]);
    // A wrong shape deep inside is still reported at its path.
    let wrong = plain.replace(r#"["501","803"]"#, r#"["501",803]"#);
    let res = validate_raw(&app, &t, wrong.into_bytes()).await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(
        res.body["error"]["details"]["issues"][0]["path"],
        json!("constraints.geo_metros[0].values[1]")
    );
}

async fn resolve(app: &TestApp, t: &Tenant, system: &str, q: &str) -> Resp {
    let q: String = url::form_urlencoded::byte_serialize(q.as_bytes()).collect();
    app.get(&dims(system, &format!("resolve?q={q}")), &t.key)
        .await
}

#[actix_web::test]
async fn dma_names_resolve_exactly_fuzzily_ambiguously_or_not_at_all() {
    let app = spawn_app().await;
    let t = app.tenant().await;

    let r = resolve(&app, &t, "nielsen_dma", "New York").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.data(),
        &json!({"system": "nielsen_dma", "query": "New York", "ambiguous": false,
                "candidates": [{"code": "501", "name": "New York, NY", "confidence": 1.0}]})
    );
    // The code itself, and the full label, are exact too.
    let r = resolve(&app, &t, "nielsen_dma", "los angeles, ca").await;
    assert_eq!(r.data()["candidates"][0]["code"], json!("803"));
    assert_eq!(r.data()["candidates"][0]["confidence"], json!(1.0));

    // A typo: the right market first, below full confidence.
    let r = resolve(&app, &t, "nielsen_dma", "Pittsburg").await;
    let c = &r.data()["candidates"];
    assert_eq!(c[0]["code"], json!("508"), "{}", r.body);
    assert!(c[0]["confidence"].as_f64().unwrap() < 1.0);
    // Abbreviations are spelled one way.
    let r = resolve(&app, &t, "nielsen_dma", "Fort Myers").await;
    assert_eq!(r.data()["candidates"][0]["code"], json!("571"));

    // Several markets carry the name: ambiguous, all of them offered.
    let r = resolve(&app, &t, "nielsen_dma", "Portland").await;
    assert_eq!(r.data()["ambiguous"], json!(true), "{}", r.body);
    let codes: Vec<&str> = r.data()["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["code"].as_str().unwrap())
        .collect();
    assert!(
        codes.contains(&"500") && codes.contains(&"820"),
        "{codes:?}"
    );

    // Nothing close: an empty answer that needs clarification, not an error.
    let r = resolve(&app, &t, "nielsen_dma", "Qwxz Vbnm").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.data()["candidates"], json!([]));
    assert_eq!(r.data()["ambiguous"], json!(false));

    // `q` is required.
    app.get(&dims("nielsen_dma", "resolve"), &t.key)
        .await
        .assert_error(400, "VALIDATION_ERROR");
    // An unknown dimension is a 404.
    resolve(&app, &t, "zip_codes", "x")
        .await
        .assert_error(404, "NOT_FOUND");
}

#[actix_web::test]
async fn countries_regions_and_languages_resolve_by_name() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let r = resolve(&app, &t, "countries", "France").await;
    assert_eq!(r.data()["candidates"][0]["code"], json!("FR"), "{}", r.body);
    let r = resolve(&app, &t, "countries", "United States").await;
    assert_eq!(r.data()["candidates"][0]["code"], json!("US"), "{}", r.body);
    let r = resolve(&app, &t, "countries", "de").await;
    assert_eq!(
        r.data()["candidates"],
        json!([{"code": "DE", "name": "Germany", "confidence": 1.0}])
    );
    let r = resolve(&app, &t, "regions", "California").await;
    assert_eq!(
        r.data()["candidates"][0]["code"],
        json!("US-CA"),
        "{}",
        r.body
    );
    let r = app
        .get(&dims("regions", "resolve?q=Ontario&country=ca"), &t.key)
        .await;
    assert_eq!(
        r.data()["candidates"][0]["code"],
        json!("CA-ON"),
        "{}",
        r.body
    );
    let r = resolve(&app, &t, "languages", "Spanish").await;
    assert_eq!(r.data()["candidates"][0]["code"], json!("es"), "{}", r.body);
    // `country` is for regions only.
    app.get(&dims("languages", "resolve?q=x&country=US"), &t.key)
        .await
        .assert_error(400, "VALIDATION_ERROR");
}

#[actix_web::test]
async fn dimension_values_are_paginated_and_filtered() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let res = app
        .get(&dims("nielsen_dma", "values?take=10"), &t.key)
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data().as_array().unwrap().len(), 10);
    assert_eq!(
        res.data()[0],
        json!({"code": "500", "name": "Portland-Auburn, ME"})
    );
    assert_eq!(
        res.body["meta"]["pagination"],
        json!({"skip": 0, "take": 10, "total": 210, "hasMore": true})
    );
    let last = app
        .get(&dims("nielsen_dma", "values?take=10&skip=205"), &t.key)
        .await;
    assert_eq!(last.data().as_array().unwrap().len(), 5);
    assert_eq!(last.body["meta"]["pagination"]["hasMore"], json!(false));

    let ny = app.get(&dims("nielsen_dma", "values?q=new"), &t.key).await;
    let names: Vec<&str> = ny
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"New York, NY") && names.contains(&"New Orleans, LA"),
        "{names:?}"
    );
    assert!(names.iter().all(|n| n.starts_with("New")), "{names:?}");

    let us = app
        .get(&dims("regions", "values?country=US&take=200"), &t.key)
        .await;
    let regions = us.data().as_array().unwrap();
    assert!(regions.iter().all(|r| r["country"] == json!("US")));
    assert!(regions.iter().any(|r| r["code"] == json!("US-CA")));
    assert!(us.body["meta"]["pagination"]["total"].as_u64().unwrap() >= 50);

    let langs = app.get(&dims("languages", "values?q=en"), &t.key).await;
    assert!(
        langs
            .data()
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l == &json!({"code": "en", "name": "English"}))
    );

    app.get(&dims("countries", "values?take=0"), &t.key)
        .await
        .assert_error(400, "VALIDATION_ERROR");
    app.get(&dims("postal", "values"), &t.key)
        .await
        .assert_error(404, "NOT_FOUND");
}

#[actix_web::test]
async fn targeting_operations_need_a_key() {
    let app = spawn_app().await;
    for (method, path) in [
        (Method::POST, VALIDATE.to_string()),
        (Method::GET, dims("nielsen_dma", "resolve?q=New%20York")),
        (Method::GET, dims("nielsen_dma", "values")),
    ] {
        let body = json!({"constraints": {}});
        let body = (method == Method::POST).then_some(&body);
        app.request(method, &path, None, body)
            .await
            .assert_error(401, "UNAUTHORIZED");
    }
}

#[actix_web::test]
async fn the_openapi_document_carries_the_vocabularies() {
    let app = spawn_app().await;
    let res = app
        .request(Method::GET, "/api/v2/openapi.json", None, None)
        .await;
    let schemas = &res.body["components"]["schemas"];
    let c = &schemas["Constraints"]["properties"];
    assert_eq!(
        c["device_type"]["items"]["enum"],
        json!(["desktop", "mobile", "tablet", "ctv", "dooh"])
    );
    let countries = c["geo_countries"]["items"]["enum"].as_array().unwrap();
    assert!(countries.contains(&json!("US")) && countries.len() >= 249);
    assert!(
        c["language"]["items"]["enum"]
            .as_array()
            .unwrap()
            .contains(&json!("en"))
    );
    assert_eq!(
        schemas["MetroArea"]["properties"]["system"]["enum"],
        json!(["nielsen_dma"])
    );
    assert!(
        res.body["paths"]["/api/v2/buyer/targeting/validate"]["post"].is_object(),
        "validate is documented"
    );
}

#[actix_web::test]
async fn odd_inputs_are_4xx_envelopes_never_500() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let odd = [
        json!(null),
        json!(42),
        json!("US"),
        json!({"geo_countries": null}),
        json!({"geo_countries": [null, {}, [], 1.5, "é", "U\u{0}S"]}),
        json!({"geo_postal_areas": [{"country": "GB", "system": "full", "values": ["ÉÉÉ ÉÉÉ", "SW1A1Aé", "\u{202e}"]}]}),
        json!({"geo_postal_areas": [{"country": "US", "system": "zip_plus_four", "values": ["é2345-1234", "-", "12345-"]}]}),
        json!({"geo_postal_areas": [{"country": ["US"], "system": 5, "values": "94105"}]}),
        json!({"geo_postal_areas": {"country": "US"}}),
        json!({"geo_metros": [{"system": null, "values": [null]}]}),
        json!({"geo_metros": [[["501"]]]}),
        json!({"language": ["e".repeat(10_000)]}),
    ];
    for c in odd {
        let res = validate(&app, &t, c.clone()).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert!(
            res.body["error"]["details"]["issues"]
                .as_array()
                .is_some_and(|i| !i.is_empty()),
            "{c} -> {}",
            res.body
        );
    }
    for q in ["%FF", "%00", "%E2%80%AE", &"a".repeat(201)] {
        let r = app
            .get(&dims("nielsen_dma", &format!("resolve?q={q}")), &t.key)
            .await;
        assert!(r.status.as_u16() < 500, "{q} -> {}", r.body);
        let r = app
            .get(&dims("regions", &format!("values?q={q}")), &t.key)
            .await;
        assert!(r.status.as_u16() < 500, "{q} -> {}", r.body);
    }
    app.get(&dims("%00", "values"), &t.key)
        .await
        .assert_error(404, "NOT_FOUND");
    // Malformed or truncated JSON: the common parser's 400.
    for raw in [
        &b"{\"constraints\": "[..],
        b"{\"constraints\": {}} x",
        b"[]",
    ] {
        let res = validate_raw(&app, &t, raw.to_vec()).await;
        res.assert_error(400, "VALIDATION_ERROR");
    }
}

#[actix_web::test]
async fn a_read_only_key_may_use_every_targeting_operation() {
    let app = spawn_app().await;
    let admin = app.tenant().await;
    let reader = app
        .user_in(&admin.account_id, "admin", &["platform:read"])
        .await;
    let c = accepted(&app, &reader, json!({"geo_countries": ["US"]})).await;
    assert_eq!(c["geo_countries"], json!(["US"]));
    let r = resolve(&app, &reader, "nielsen_dma", "Chicago").await;
    assert_eq!(
        r.data()["candidates"][0]["code"],
        json!("602"),
        "{}",
        r.body
    );
    let v = app.get(&dims("languages", "values"), &reader.key).await;
    assert_eq!(v.status, 200, "{}", v.body);
}

#[actix_web::test]
async fn the_targeting_operations_run_the_same_through_the_dispatcher_and_mcp() {
    use agentic_api::ops::{OperationCall, dispatch};
    let app = spawn_app().await;
    let t = app.tenant().await;
    let caller = app.state.auth.authenticate(&t.key).await.unwrap().unwrap();
    let call = |v: Value| serde_json::from_value::<OperationCall>(v).unwrap();

    let rest = resolve(&app, &t, "nielsen_dma", "Chicago").await;
    let op = dispatch(
        &app.state.ctx,
        caller.clone(),
        call(json!({"operation": "resolve_targeting_dimension",
                    "pathParams": {"system": "nielsen_dma"}, "params": {"q": "Chicago"}})),
    )
    .await
    .unwrap();
    assert_eq!(&op.data, rest.data());
    let constraints = json!({"countries": ["fr"], "geo_postal_areas": [{"country": "FR", "system": "code_postal", "values": ["75001"]}]});
    let rest = validate(&app, &t, constraints.clone()).await;
    let op = dispatch(
        &app.state.ctx,
        caller.clone(),
        call(json!({"operation": "validate_targeting", "body": {"constraints": constraints}})),
    )
    .await
    .unwrap();
    assert_eq!(&op.data, rest.data());
    let err = dispatch(
        &app.state.ctx,
        caller.clone(),
        call(json!({"operation": "validate_targeting",
                    "body": {"constraints": {"geo_postal_areas": [{"country": "FR", "system": "zip", "values": ["75001"]}]}}})),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.body()["field"],
        json!("constraints.geo_postal_areas[0].system")
    );

    // Every operation is an MCP tool with the same answer.
    let mut s = crate::mcp::open(&app, &t.key).await;
    let listed = s
        .call(
            &app,
            "list_targeting_dimension_values",
            json!({"pathParams": {"system": "languages"}, "params": {"take": 3}}),
        )
        .await;
    let rest = app.get(&dims("languages", "values?take=3"), &t.key).await;
    assert_eq!(
        &listed["structuredContent"]["data"],
        rest.data(),
        "{listed}"
    );
    let bad = s
        .call(
            &app,
            "resolve_targeting_dimension",
            json!({"pathParams": {"system": "zodiac"}, "params": {"q": "Leo"}}),
        )
        .await;
    assert_eq!(bad["isError"], true);
    assert_eq!(bad["structuredContent"]["code"], "NOT_FOUND", "{bad}");
}
