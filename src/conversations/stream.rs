//! A conversation stream's replay: persisted messages after the client's
//! cursor, as `message.created` frames, for the shared SSE body.

use std::future::Future;
use std::pin::Pin;

use sea_orm::DatabaseConnection;

use super::model::message_created_data;
use super::room::message_frame;
use super::service;
use crate::sse::{ReplayPage, ReplaySource, StreamError};

pub struct MessageReplay {
    pub db: DatabaseConnection,
    pub uid: String,
}

impl ReplaySource for MessageReplay {
    fn page(&self, after: i64, rows: u64) -> Pin<Box<dyn Future<Output = ReplayPage> + Send>> {
        let db = self.db.clone();
        let uid = self.uid.clone();
        let read = crate::rt::detached({
            let uid = uid.clone();
            async move { service::messages_between(&db, &uid, after, None, rows).await }
        });
        Box::pin(async move {
            let messages = read
                .await
                .unwrap_or_else(|| Err(sea_orm::DbErr::Custom("replay cancelled".into())))
                .map_err(|err| {
                    tracing::warn!(error = %err, "room replay failed");
                    StreamError::database_unavailable()
                })?;
            Ok(messages
                .iter()
                .map(|m| {
                    (
                        m.sequence,
                        message_frame(m.sequence, &message_created_data(&uid, m)),
                    )
                })
                .collect())
        })
    }
}
