//! Unmatched requests: 405 with `Allow` when the path exists under another
//! method, else 404. The table comes from the OpenAPI document, which is
//! generated from the operation registry and the routes' own
//! descriptions, so it cannot drift.

use actix_web::dev::ResourceDef;
use actix_web::{HttpRequest, web};

use crate::error::ApiError;

pub struct RouteTable(Vec<(ResourceDef, Vec<String>)>);

impl RouteTable {
    pub fn from_openapi(doc: &serde_json::Value) -> Self {
        let routes = doc["paths"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(path, json)| {
                let methods = ["get", "put", "post", "delete", "patch", "head", "options"]
                    .iter()
                    .filter(|m| json.get(**m).is_some())
                    .map(|m| m.to_ascii_uppercase())
                    .collect();
                (ResourceDef::new(path.as_str()), methods)
            })
            .collect();
        RouteTable(routes)
    }

    pub fn allowed(&self, path: &str) -> Option<Vec<String>> {
        self.0
            .iter()
            .find(|(def, _)| def.is_match(path))
            .map(|(_, m)| m.clone())
    }
}

pub async fn not_found(
    req: HttpRequest,
    table: web::Data<RouteTable>,
) -> Result<actix_web::HttpResponse, ApiError> {
    Err(match table.allowed(req.path()) {
        Some(allow) => ApiError::MethodNotAllowed { allow },
        None => ApiError::NotFound(format!("no route for {} {}", req.method(), req.path())),
    })
}
