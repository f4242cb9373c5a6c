//! The management API's routes as data: a room declares each path and its methods here,
//! which builds axum's router and keeps the table beside it, so that what is routed can
//! be read (the OpenAPI document's check compares the two) rather than guessed.

use std::collections::BTreeSet;

use axum::Router;
use axum::handler::Handler;
use axum::routing::MethodRouter;

use crate::state::AppState;

/// A method router and the methods it serves.
pub struct Methods {
    router: MethodRouter<AppState>,
    methods: Vec<&'static str>,
}

/// Declares a method's start of a chain, as axum's `routing::get`.
macro_rules! first_method {
    ($($name:ident => $method:literal),* $(,)?) => {
        $(
            #[doc = concat!("Serves `", $method, "` with `handler`.")]
            pub fn $name<H, T>(handler: H) -> Methods
            where
                H: Handler<T, AppState>,
                T: 'static,
            {
                Methods {
                    router: axum::routing::$name(handler),
                    methods: vec![$method],
                }
            }
        )*
    };
}

/// Declares a method's link of a chain, as axum's `MethodRouter::get`.
macro_rules! chained_method {
    ($($name:ident => $method:literal),* $(,)?) => {
        impl Methods {
            $(
                #[doc = concat!("Serves `", $method, "` with `handler` too.")]
                pub fn $name<H, T>(mut self, handler: H) -> Self
                where
                    H: Handler<T, AppState>,
                    T: 'static,
                {
                    self.router = self.router.$name(handler);
                    self.methods.push($method);
                    self
                }
            )*
        }
    };
}

// Every route of ours starts with GET or POST.
first_method!(get => "GET", post => "POST", put => "PUT");
chained_method!(get => "GET", post => "POST", put => "PUT", delete => "DELETE");

/// Routes and the table of what they serve.
#[derive(Default)]
pub struct Routes {
    router: Router<AppState>,
    operations: BTreeSet<(String, &'static str)>,
}

impl Routes {
    /// No routes yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serves `methods` at `path` (axum's path syntax).
    pub fn route(mut self, path: &str, methods: Methods) -> Self {
        for method in &methods.methods {
            self.operations.insert((path.to_string(), method));
        }
        self.router = self.router.route(path, methods.router);
        self
    }

    /// These routes and `other`'s.
    pub fn merge(mut self, other: Routes) -> Self {
        self.router = self.router.merge(other.router);
        self.operations.extend(other.operations);
        self
    }

    /// What is routed: `(path, method)`, HEAD left out (axum serves it with GET).
    pub fn operations(&self) -> &BTreeSet<(String, &'static str)> {
        &self.operations
    }

    /// The router.
    pub fn into_router(self) -> Router<AppState> {
        self.router
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn ok() -> &'static str {
        "ok"
    }

    #[test]
    fn the_table_holds_each_path_and_method_routed() {
        let routes = Routes::new()
            .route("/a", get(ok).post(ok))
            .merge(Routes::new().route("/b/{id}", post(ok).delete(ok).put(ok)));
        let table: Vec<_> = routes.operations().iter().cloned().collect();
        assert_eq!(
            table,
            [
                ("/a".to_string(), "GET"),
                ("/a".to_string(), "POST"),
                ("/b/{id}".to_string(), "DELETE"),
                ("/b/{id}".to_string(), "POST"),
                ("/b/{id}".to_string(), "PUT"),
            ]
        );
    }
}
