use std::process::ExitCode;

use clap::Parser;

use agentic_api::cli::{Cli, Command};
use agentic_api::{Application, admin, db, demo, telemetry};

#[actix_web::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    telemetry::init(&cli.config.log);
    match run(cli).await {
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
            let conn = db::connect_with(&config.database_url, config.sqlite_synchronous).await?;
            db::migrate(&conn).await?;
            if with_demo {
                let d = demo::seed(&conn).await?;
                println!("demo account: {}", d.account_id);
                println!("demo API key (platform:write, shown once): {}", d.api_key);
            }
            let app = Application::build_with_db(config, conn).await?;
            println!("listening on {}", app.state().listen_url());
            app.run_until_signal().await?;
            tracing::info!("stopped");
        }
    }
    Ok(())
}
