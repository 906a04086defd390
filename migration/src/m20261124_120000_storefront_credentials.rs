use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // The bearer token sent to a seller agent (`register-storefront
        // --auth-token`). Stored as given because it must be sent; never
        // returned by the API.
        m.alter_table(
            Table::alter()
                .table("storefronts")
                .add_column(text_null("auth_token"))
                .to_owned(),
        )
        .await?;
        // Storefront names are unique whatever their case (discovery filters
        // and the operator refer to storefronts by name).
        m.get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX ux_storefronts_name ON storefronts (LOWER(name))",
            )
            .await?;
        Ok(())
    }
}
