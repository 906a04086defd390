//! The Telnyx adapter against a fake carrier on 127.0.0.1: the wire format
//! it sends, and how each kind of answer (or none) becomes a submission's
//! outcome; an unknown outcome is never a refusal or a retry.

use std::time::Duration;

use agentic_api::net::{Outbound, OutboundOptions};
use agentic_api::phone::carrier::{Carrier, Outgoing, Submission};
use agentic_api::phone::telnyx::Telnyx;
use agentic_api::types::UrlPolicy;
use serde_json::json;

use crate::fake_carrier::FakeCarrier;

fn adapter(base: &str, timeout: Duration) -> Telnyx {
    let outbound = Outbound::start(
        UrlPolicy {
            allow_insecure: true,
        },
        OutboundOptions::default(),
    )
    .expect("outbound client");
    Telnyx::new(outbound, base, "KEY-123".parse().ok(), timeout)
}

fn message(channel: &str) -> Outgoing {
    Outgoing {
        message_id: 7,
        channel: channel.into(),
        from: "+12125550100".into(),
        to: "+12127360000".into(),
        text: "Your proposal is ready.".into(),
        messaging_profile: Some("profile-a".into()),
    }
}

#[actix_web::test]
async fn sms_and_rcs_go_out_in_the_carriers_wire_format_and_its_id_is_kept() {
    let carrier = FakeCarrier::start().await;
    let telnyx = adapter(&carrier.base, Duration::from_secs(5));
    let sms = telnyx.submit(&message("sms")).await;
    assert_eq!(
        sms,
        Submission::Accepted {
            carrier_id: "40317f2c-0000-4000-8000-000000000001".into(),
            report: None
        }
    );
    let rcs = telnyx.submit(&message("rcs")).await;
    assert!(
        matches!(rcs, Submission::Accepted { ref carrier_id, .. } if carrier_id.ends_with("0002"))
    );
    let seen = carrier.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].path, "/v2/messages");
    assert_eq!(seen[0].authorization.as_deref(), Some("Bearer KEY-123"));
    assert_eq!(
        seen[0].body,
        json!({"from": "+12125550100", "to": "+12127360000", "text": "Your proposal is ready.",
               "messaging_profile_id": "profile-a", "type": "SMS"})
    );
    assert_eq!(seen[1].path, "/v2/messages/rcs");
    assert_eq!(
        seen[1].body,
        json!({"agent_id": "+12125550100", "to": "+12127360000",
               "messaging_profile_id": "profile-a",
               "agent_message": {"content_message": {"text": "Your proposal is ready."}}})
    );
}

#[actix_web::test]
async fn refusals_retryable_answers_and_unknown_outcomes_are_told_apart() {
    let carrier = FakeCarrier::start().await;
    let telnyx = adapter(&carrier.base, Duration::from_millis(500));
    carrier.answer(422);
    let refused = telnyx.submit(&message("rcs")).await;
    assert!(
        matches!(&refused, Submission::Rejected(why) if why.contains("40310") && why.contains("not valid")),
        "{refused:?}"
    );
    carrier.answer(429);
    assert!(matches!(
        telnyx.submit(&message("sms")).await,
        Submission::NotSent(_)
    ));
    carrier.answer(502);
    assert!(matches!(
        telnyx.submit(&message("sms")).await,
        Submission::Unknown(_)
    ));
    // The request arrived and no answer came: it may have been sent.
    carrier.hang();
    let hung = telnyx.submit(&message("sms")).await;
    assert!(matches!(hung, Submission::Unknown(_)), "{hung:?}");
    assert_eq!(
        carrier.requests().len(),
        4,
        "one request per submission, no retry inside"
    );
}

#[actix_web::test]
async fn a_carrier_that_cannot_be_reached_was_sent_nothing() {
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let telnyx = adapter(&format!("http://127.0.0.1:{port}"), Duration::from_secs(2));
    let out = telnyx.submit(&message("sms")).await;
    assert!(matches!(out, Submission::NotSent(_)), "{out:?}");
}
