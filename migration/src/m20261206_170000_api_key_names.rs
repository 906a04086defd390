use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // A label the user gives a key on the keys page (optional; keys
        // issued by the operator CLI have none).
        m.alter_table(
            Table::alter()
                .table("api_keys")
                .add_column(text_null("name"))
                .to_owned(),
        )
        .await?;
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.alter_table(
            Table::alter()
                .table("api_keys")
                .drop_column("name")
                .to_owned(),
        )
        .await?;
        Ok(())
    }
}
