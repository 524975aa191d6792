//! Reads of one integer from Redis (`LLEN`, `XLEN`, `ZCARD`, `SCARD`, `GET`, `HGET`), over a
//! connection manager per server URL, kept between collections.

use std::collections::HashMap;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::Refusal;
use crate::sources::{RedisCommand, RedisRead, RedisServer};

/// The connections, by server URL.
#[derive(Default)]
pub(crate) struct RedisPool {
    connections: tokio::sync::Mutex<HashMap<String, ConnectionManager>>,
}

/// What a read answered: the reply's text (part of the `source_digest`) and its integer.
pub(crate) struct Reply {
    /// The reply as text (`"42"`), or `nil`.
    pub(crate) text: String,
    /// The integer, when the reply is one.
    pub(crate) value: Option<i64>,
}

impl RedisPool {
    /// Runs `read` on `server`.
    ///
    /// # Errors
    /// A [`Refusal`] with cause `timeout` or `redis_error` (connection, command, wrong type).
    pub(crate) async fn read(&self, server: &RedisServer, read: &RedisRead) -> Result<Reply, Refusal> {
        let timeout = Duration::from_millis(server.timeout_ms);
        match tokio::time::timeout(timeout, self.run(server, read)).await {
            Ok(result) => result,
            Err(_) => Err(Refusal::new("timeout", format!("no Redis answer within {} ms", server.timeout_ms))),
        }
    }

    async fn run(&self, server: &RedisServer, read: &RedisRead) -> Result<Reply, Refusal> {
        let failed = |message: String| Refusal::new("redis_error", message);
        let mut connection = {
            let mut connections = self.connections.lock().await;
            match connections.get(&server.url) {
                Some(connection) => connection.clone(),
                None => {
                    // The URL may hold a password: no error text quotes it.
                    let client = redis::Client::open(server.url.as_str())
                        .map_err(|error| failed(format!("invalid Redis URL: {:?}", error.kind())))?;
                    let config = ConnectionManagerConfig::new()
                        .set_connection_timeout(Some(Duration::from_millis(server.timeout_ms)))
                        .set_response_timeout(Some(Duration::from_millis(server.timeout_ms)))
                        .set_number_of_retries(0);
                    let connection = ConnectionManager::new_with_config(client, config)
                        .await
                        .map_err(|error| failed(format!("cannot connect: {error}")))?;
                    connections.insert(server.url.clone(), connection.clone());
                    connection
                }
            }
        };
        let mut command = redis::cmd(read.command.as_str());
        command.arg(&read.key);
        if let (RedisCommand::Hget, Some(field)) = (read.command, &read.field) {
            command.arg(field);
        }
        let reply: redis::Value = command
            .query_async(&mut connection)
            .await
            .map_err(|error| failed(format!("{}: {error}", read.command.as_str())))?;
        Ok(match reply {
            redis::Value::Int(value) => Reply { text: value.to_string(), value: Some(value) },
            redis::Value::BulkString(bytes) => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let value = text.trim().parse::<i64>().ok();
                Reply { text, value }
            }
            redis::Value::Nil => Reply { text: "nil".to_owned(), value: None },
            other => Reply { text: format!("{other:?}"), value: None },
        })
    }
}
