#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirRuntime

/// The `flowdir` command: one type per subcommand, one file each. Errors
/// from every subcommand are rendered here, in one place.
public struct Flowdir: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "flowdir",
        abstract: "Run AI and media workflows that live in plain folders, one git repository each.",
        discussion: """
            A workflow is a DAG of tool nodes joined by typed ports, written as a YAML, JSON \
            or JSONC template. Each instance is a folder and a git repository: every state \
            change is a commit. The folder layout, file formats and commands are described \
            in docs/ of flowdir's repository (instance-folder.md, templates-and-tools.md, \
            commands.md).

            Exit codes: 0 success; 1 the input is invalid or something failed; 2 a file could \
            not be read (check), or the workflow waits on a person, a remote job or a missing \
            tool (run); 64 the command line is wrong; 75 the instance is busy (another flowdir \
            holds its lock; try again).
            """,
        version: FlowdirVersion.current,
        subcommands: [
            CheckCommand.self, TemplatesCommand.self, NewCommand.self, LsCommand.self, ShowCommand.self,
            StatusCommand.self, HistoryCommand.self, RollbackCommand.self, DuplicateCommand.self,
            ArchiveCommand.self, DeleteCommand.self, RunCommand.self, RetryCommand.self, RerunCommand.self,
            CancelCommand.self, LogsCommand.self, InboxCommand.self, AnswerCommand.self, SnoozeCommand.self,
            SkipCommand.self, ClaimCommand.self, OpenCommand.self, WatchCommand.self, ServiceCommand.self, PollingCommand.self, JobserverCommand.self,
            SyncCommand.self, CloneCommand.self, LeaseCommand.self, ServeCommand.self, StorageCommand.self, LFSCommand.self,
        ]
    )

    public init() {}

    /// The entry point: parse, run, and render any error in one place.
    public static func runMain() async {
        do {
            var command = try parseAsRoot()
            if var async = command as? AsyncParsableCommand {
                try await async.run()
            } else {
                try command.run()
            }
        } catch let code as ExitCode {
            // A command's own outcome: nothing to print. The parser's
            // exit(withError:) would build its help text first (~0.4 ms).
            Glibc.exit(code.rawValue)
        } catch let error as CommandError {
            fail(error.description, code: error.exitCode)
        } catch let error as InstanceError {
            fail(error.description, code: 1)
        } catch let error as InstanceLock.Busy {
            fail(error.description, code: 75)
        } catch let error as CommitFailure {
            fail(error.description, code: 1)
        } catch let error as GitError {
            fail("git: \(error)", code: 1)
        } catch let error as FileSystemError {
            fail(error.description, code: 1)
        } catch let error as EngineError {
            fail(error.description, code: 1)
        } catch let error as ContentRemoteError {
            // Large files' content (docs/storage.md): what went wrong, and what to do when there is something.
            fail(error.hint.map { "\(error)\nhint: \($0)" } ?? error.description, code: 1)
        } catch {
            exit(withError: error)
        }
    }

    static func fail(_ message: String, code: Int32) -> Never {
        let terminal = Terminal.current
        let label = terminal.colorErr ? "\u{1B}[1;31merror:\u{1B}[0m" : "error:"
        Output.error("flowdir: \(label) \(message)")
        Glibc.exit(code)
    }
}

public enum FlowdirVersion {
    public static let current = "0.1.0"
}
