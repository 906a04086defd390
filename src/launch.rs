//! The binary's entry: parse the command line, then run the command on an
//! actix system. It lives in the library, not in `main.rs`, so that the async
//! bodies it polls (serving, the demo, `admin`) are compiled once, with the
//! rest of the crate's code, instead of again in the binary (release builds
//! share no generic code between crates).

use std::process::ExitCode;

use clap::Parser;

use crate::app::Signals;
use crate::cli::{Cli, Command, InternalCommand};
use crate::{Application, admin, db, demo, phone, telemetry};

/// Runs the command line's command; what `main` returns.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    telemetry::init(&cli.config.log, cli.config.log_format);
    let result = actix_web::rt::System::new().block_on(run(cli));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let config = cli.config;
    match cli.command {
        Command::Internal {
            command: InternalCommand::ExtractPdf(args),
        } => phone::fax::pdf::run_child(&args)?,
        Command::Migrate => {
            let conn = db::connect_with(&config.database_url, config.sqlite_synchronous).await?;
            db::migrate(&conn).await?;
            println!("{}", serde_json::json!({ "migrated": true }));
        }
        Command::Admin { migrate, command } => {
            let conn = db::connect_with(&config.database_url, config.sqlite_synchronous).await?;
            db::migrate_for_admin(&conn, migrate).await?;
            let out = admin::run(&conn, &config, command).await?;
            println!("{out}");
        }
        Command::Serve { demo: with_demo } => {
            raise_open_file_limit();
            let conn = db::connect_with(&config.database_url, config.sqlite_synchronous).await?;
            db::migrate(&conn).await?;
            let seeded = if with_demo {
                let d = demo::seed(&conn).await?;
                println!("demo account: {}", d.account_id);
                println!("demo API key (platform:write, shown once): {}", d.api_key);
                println!(
                    "demo storefronts: {} built-in sellers (ids {:?})",
                    d.storefront_ids.len(),
                    d.storefront_ids
                );
                Some(d)
            } else {
                None
            };
            let app = Application::build_with_db(config, conn).await?;
            let signals = Signals::listen()?;
            if let Some(addr) = app.metrics_addr() {
                println!("metrics on http://{addr}/metrics");
            }
            println!("console on {}/", app.state().public_url);
            if let Some(d) = seeded {
                println!(
                    "demo login (console, shown once): {} / {}",
                    d.email, d.password
                );
            }
            println!("listening on {}", app.state().listen_url());
            app.run_until_signal(signals).await?;
            tracing::info!("stopped");
        }
    }
    Ok(())
}

/// Every SSE subscriber holds a socket: serve as many as the operator's
/// hard limit allows, and say what the limits are.
fn raise_open_file_limit() {
    match rlimit::getrlimit(rlimit::Resource::NOFILE) {
        Ok((soft, hard)) => match rlimit::increase_nofile_limit(hard) {
            Ok(now) => tracing::info!(soft_was = soft, soft = now, hard, "open-file limit"),
            Err(err) => {
                tracing::warn!(error = %err, soft, hard, "could not raise the open-file limit")
            }
        },
        Err(err) => tracing::warn!(error = %err, "could not read the open-file limit"),
    }
}
