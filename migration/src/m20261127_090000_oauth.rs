use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // An OAuth grant is a credential of its user like an API key, so it
        // is a row of `api_keys` (kind `oauth`, no secret: it can never be
        // presented as a key) and everything that follows a key (the auth
        // cache, revocation on the bus, open streams, audit) follows it.
        m.alter_table(
            Table::alter()
                .table("api_keys")
                .add_column(string("kind").default("key"))
                .to_owned(),
        )
        .await?;
        // Dynamically registered public clients (RFC 7591).
        m.create_table(
            Table::create()
                .table("oauth_clients")
                .col(string("id").primary_key())
                .col(text_null("client_name"))
                // JSON array of the exact redirect URIs.
                .col(text("redirect_uris"))
                .col(timestamp_with_time_zone("created_at"))
                .to_owned(),
        )
        .await?;
        // An authorization in progress in a browser: between GET /authorize
        // and the consent form. Only hashes of its CSRF token and of its
        // browser cookie are stored.
        m.create_table(
            Table::create()
                .table("oauth_requests")
                .col(string("id").primary_key())
                .col(string("client_id"))
                .col(text("redirect_uri"))
                .col(string("scope"))
                .col(text_null("state"))
                .col(string("code_challenge"))
                .col(text_null("resource"))
                .col(string("csrf_hash"))
                .col(string("browser_hash"))
                .col(big_integer_null("user_id"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("expires_at"))
                .foreign_key(&mut crate::cascade(
                    "oauth_requests",
                    "client_id",
                    "oauth_clients",
                    "id",
                ))
                .foreign_key(&mut crate::cascade(
                    "oauth_requests",
                    "user_id",
                    "users",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        // One row per grant, keyed by its credential row in `api_keys`
        // (whose `revoked_at` is the grant's revocation).
        m.create_table(
            Table::create()
                .table("oauth_grants")
                .col(big_integer("api_key_id").primary_key())
                .col(string("client_id"))
                .col(big_integer("user_id"))
                .col(string("scope"))
                .col(text_null("resource"))
                .col(timestamp_with_time_zone("created_at"))
                .foreign_key(&mut crate::cascade(
                    "oauth_grants",
                    "api_key_id",
                    "api_keys",
                    "id",
                ))
                .foreign_key(&mut crate::cascade(
                    "oauth_grants",
                    "client_id",
                    "oauth_clients",
                    "id",
                ))
                .foreign_key(&mut crate::cascade(
                    "oauth_grants",
                    "user_id",
                    "users",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        // Authorization codes: single use (`used_at`); `grant_id` is the
        // grant the exchange created, revoked if the code comes back.
        m.create_table(
            Table::create()
                .table("oauth_codes")
                .col(big_pk_auto("id"))
                .col(string_uniq("prefix"))
                .col(string("code_hash"))
                .col(string("client_id"))
                .col(big_integer("user_id"))
                .col(text("redirect_uri"))
                .col(string("scope"))
                .col(string("code_challenge"))
                .col(text_null("resource"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("expires_at"))
                .col(timestamp_with_time_zone_null("used_at"))
                .col(big_integer_null("grant_id"))
                .foreign_key(&mut crate::cascade(
                    "oauth_codes",
                    "client_id",
                    "oauth_clients",
                    "id",
                ))
                .foreign_key(&mut crate::cascade("oauth_codes", "user_id", "users", "id"))
                .to_owned(),
        )
        .await?;
        // Access and refresh tokens (`kind`); a refresh token is spent
        // (`used_at`) when it is rotated.
        m.create_table(
            Table::create()
                .table("oauth_tokens")
                .col(big_pk_auto("id"))
                .col(big_integer("grant_id"))
                .col(string("kind"))
                .col(string_uniq("prefix"))
                .col(string("token_hash"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("expires_at"))
                .col(timestamp_with_time_zone_null("used_at"))
                .foreign_key(&mut crate::cascade(
                    "oauth_tokens",
                    "grant_id",
                    "oauth_grants",
                    "api_key_id",
                ))
                .to_owned(),
        )
        .await?;
        // Pruning deletes by expiry.
        for (table, index) in [
            ("oauth_requests", "idx_oauth_requests_expires_at"),
            ("oauth_codes", "idx_oauth_codes_expires_at"),
            ("oauth_tokens", "idx_oauth_tokens_expires_at"),
        ] {
            m.create_index(
                Index::create()
                    .name(index)
                    .table(table)
                    .col("expires_at")
                    .to_owned(),
            )
            .await?;
        }
        m.create_index(
            Index::create()
                .name("idx_oauth_tokens_grant_id")
                .table("oauth_tokens")
                .col("grant_id")
                .to_owned(),
        )
        .await?;
        Ok(())
    }
}
