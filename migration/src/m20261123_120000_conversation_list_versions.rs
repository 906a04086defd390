use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // One counter per account, incremented in the same transaction as
        // every change a conversation list shows (create, rename, sharing,
        // message, presence). Instances sharing the database validate their
        // cached lists against it; a missing row reads as version 0.
        m.create_table(
            Table::create()
                .table("conversation_list_versions")
                .col(string("account_id").primary_key())
                .col(big_integer("version"))
                .foreign_key(&mut crate::cascade(
                    "conversation_list_versions",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        Ok(())
    }
}
