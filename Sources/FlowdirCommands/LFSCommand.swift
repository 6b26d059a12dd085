#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FlowdirCore
import FlowdirIO

/// `flowdir lfs clean|smudge -- PATH`: git's `lfs` filter on a machine
/// without git-lfs (docs/storage.md). git runs it; people need not.
struct LFSCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lfs",
        abstract: "git's lfs filter where git-lfs is not installed (git runs it).",
        discussion: """
            flowdir names itself as the repository's `filter.lfs` when git-lfs is absent, so `git status`, \
            `git checkout`, `git add` and `git stash` treat large files as pointers with or without git-lfs. \
            clean: stdin → its pointer (content into .git/lfs/objects). smudge: a pointer on stdin → the content \
            when it is here, else the pointer itself (get it with `flowdir storage get`).
            """,
        shouldDisplay: false
    )

    enum Step: String, ExpressibleByArgument, CaseIterable {
        case clean, smudge
    }

    @Argument(help: "clean or smudge.")
    var step: Step

    @Argument(help: "The path git names (%f); unused.")
    var path: String?

    func run() throws {
        let repo: GitRepository
        do { repo = try GitRepository.open(Files.currentDirectory) } catch {
            throw CommandError("flowdir lfs \(step.rawValue): not in a git repository (\(Files.currentDirectory))")
        }
        do {
            switch step {
            case .clean: try LFSFilter.clean(gitDirectory: repo.gitDirectory, input: 0, output: 1)
            case .smudge: try LFSFilter.smudge(gitDirectory: repo.gitDirectory, input: 0, output: 1)
            }
        } catch {
            throw CommandError("flowdir lfs \(step.rawValue) \(path ?? ""): \(error)",
                               hint: "`flowdir storage verify` names what changed; `flowdir storage get` fetches it again")
        }
    }
}
