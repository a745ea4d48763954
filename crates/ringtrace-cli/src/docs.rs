//! Shell completions and man pages, generated from the command definitions
//! (clap_complete, clap_mangen), so they never disagree with `--help`.
//! `scripts/install.sh` installs both.

use std::path::PathBuf;

use clap::CommandFactory;

/// Arguments of `completions`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  ringtrace completions bash > ~/.local/share/bash-completion/completions/ringtrace\n  \
                        ringtrace completions zsh > ~/.zfunc/_ringtrace"
)]
pub struct CompletionArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// Arguments of `man`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  ringtrace man | man -l -\n  ringtrace man -o ~/.local/share/man/man1"
)]
pub struct ManArgs {
    /// Write ringtrace.1 and ringtrace-<subcommand>.1 into this folder
    /// (created if missing) instead of printing ringtrace.1.
    #[arg(short, long)]
    output: Option<PathBuf>,
}

/// Prints the completion script of a shell.
pub fn completions(a: CompletionArgs) -> Result<(), Box<dyn std::error::Error>> {
    let mut cmd = crate::Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "ringtrace", &mut buf);
    out!("{}", String::from_utf8(buf)?);
    Ok(())
}

/// Prints ringtrace.1, or writes every page into a folder.
pub fn man(a: ManArgs) -> Result<(), Box<dyn std::error::Error>> {
    let cmd = crate::Cli::command();
    match a.output {
        None => {
            let mut buf = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut buf)?;
            out!("{}", String::from_utf8(buf)?);
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("-o {}: cannot create it: {e}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir)
                .map_err(|e| format!("-o {}: cannot write the pages: {e}", dir.display()))?;
            let n = std::fs::read_dir(&dir)?
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".1"))
                .count();
            eprintln!("{n} man pages written to {}", dir.display());
        }
    }
    Ok(())
}
