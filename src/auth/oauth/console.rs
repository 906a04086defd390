//! The web console's own OAuth client: a built-in, first-party public client
//! (`agentic-console`) that signs people in with the authorization code
//! grant and PKCE S256, like any agent host, with three differences:
//!
//! - It is not registered through `POST /auth/register`: its row in
//!   `oauth_clients` is written on first use (and never pruned: it is
//!   marked used), and its redirect URIs are computed, not stored: the
//!   console's callback on the public URL, and, when the public URL is a
//!   loopback or unspecified address, the same port on each loopback name
//!   (`localhost`, `127.0.0.1`, `[::1]`), since a browser on this machine
//!   may use any of them.
//! - Its redirect URIs all lead back to this server's own callback page, so
//!   a code can only land in the console, whose script holds the PKCE
//!   verifier. Hence no consent page: the person signing in is using this
//!   server's own interface, and nothing else can receive the code.
//! - It asks for `platform:write`: the console acts as the user with
//!   everything a key can carry.

use chrono::Utc;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ConnectionTrait, DbErr, EntityTrait, Set};

use entity::oauth_client;

use super::store::Client;

/// The console's fixed `client_id`.
pub const CLIENT_ID: &str = "agentic-console";
/// What the login page calls it.
pub const CLIENT_NAME: &str = "Agentic console";
/// The console's redirect URI path (a page of the console).
pub const CALLBACK_PATH: &str = "/console/callback";
/// The scopes the console asks for.
pub const SCOPE: &str = "openid profile email platform:write";

pub fn is_console(client_id: &str) -> bool {
    client_id == CLIENT_ID
}

/// The exact redirect URIs the console may use with this public URL.
pub fn redirect_uris(public_url: &str) -> Vec<String> {
    let base = public_url.trim_end_matches('/');
    let mut uris = vec![format!("{base}{CALLBACK_PATH}")];
    let Ok(url) = url::Url::parse(base) else {
        return uris;
    };
    let local = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_unspecified(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback() || ip.is_unspecified(),
        None => false,
    };
    if local && url.scheme() == "http" {
        let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
        for host in ["localhost", "127.0.0.1", "[::1]"] {
            let uri = format!("http://{host}{port}{CALLBACK_PATH}");
            if !uris.contains(&uri) {
                uris.push(uri);
            }
        }
    }
    uris
}

/// The console's client, its row written if missing (idempotent; safe on
/// several instances at once).
pub async fn client(db: &impl ConnectionTrait, public_url: &str) -> Result<Client, DbErr> {
    let now = Utc::now();
    let row = oauth_client::ActiveModel {
        id: Set(CLIENT_ID.into()),
        client_name: Set(Some(CLIENT_NAME.into())),
        // Computed from the public URL on each use, never stored.
        redirect_uris: Set("[]".into()),
        created_at: Set(now),
        // Marked used, so pruning never removes it.
        used_at: Set(Some(now)),
    };
    oauth_client::Entity::insert(row)
        .on_conflict(
            OnConflict::column(oauth_client::Column::Id)
                .do_nothing()
                .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    Ok(Client {
        id: CLIENT_ID.into(),
        name: Some(CLIENT_NAME.into()),
        redirect_uris: redirect_uris(public_url),
        created_at: now,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callback_is_on_the_public_url_and_every_loopback_name() {
        assert_eq!(
            redirect_uris("https://ads.example.com/"),
            ["https://ads.example.com/console/callback"]
        );
        assert_eq!(
            redirect_uris("http://127.0.0.1:8080"),
            [
                "http://127.0.0.1:8080/console/callback",
                "http://localhost:8080/console/callback",
                "http://[::1]:8080/console/callback",
            ]
        );
        assert_eq!(
            redirect_uris("http://0.0.0.0:9000"),
            [
                "http://0.0.0.0:9000/console/callback",
                "http://localhost:9000/console/callback",
                "http://127.0.0.1:9000/console/callback",
                "http://[::1]:9000/console/callback",
            ]
        );
        // A public host gets no loopback aliases.
        assert_eq!(
            redirect_uris("http://ads.internal:8080"),
            ["http://ads.internal:8080/console/callback"]
        );
    }
}
