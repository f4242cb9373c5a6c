//! The developer portal, `/devportal`: WSO2's Store in the browser. Its pages render on
//! the server and work without a script; a signed-in user (the authorization code flow,
//! `web::signin`) sees what their token sees, anyone else what anonymous callers of the
//! store API see. Every page is made from the public store API's answers (`web::calls`),
//! never from the database: `views` turns them into what the templates show, `pages`
//! serves them.

pub(crate) mod analytics;
pub(crate) mod applications;
pub(crate) mod documents;
pub(crate) mod keys;
pub(crate) mod pages;
pub(crate) mod try_it;
mod views;
mod visits;

use crate::web::signin::WebApp;

/// The portal as an OAuth client of the control plane.
pub const DEVPORTAL: WebApp = WebApp {
    client_id: "apim-devportal",
    name: "Developer Portal",
    base: "/devportal",
    cookie: "apim_devportal",
    pending_cookie: "apim_devportal_signin",
};
