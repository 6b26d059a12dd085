#if canImport(Glibc)
import Glibc
#endif
import FlowdirIO
import Subprocess
import SystemPackage

/// The same job as `LocalRunner` runs (own process group, output read to a
/// log, the group swept at the end), through swift-subprocess 1.0.2, which
/// flowdir used until it measured it: `spawn-timing --swift-subprocess`
/// keeps the comparison reproducible. Not part of flowdir itself.
enum SwiftSubprocessRunner {
    static func run(_ program: String, _ arguments: [String], directory: String, logPath: String) async -> Bool {
        let log = open(logPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        defer { close(log) }
        var options = PlatformOptions()
        options.processGroupID = 0
        do {
            let result = try await Subprocess.run(
                .path(FilePath(program)), arguments: Arguments(arguments), environment: .custom(LocalRunner.inherited),
                workingDirectory: FilePath(directory), platformOptions: options,
                input: .none, output: .sequence, error: .combinedWithOutput
            ) { execution in
                let leader = execution.processIdentifier.value
                for try await buffer in execution.standardOutput {
                    _ = buffer.withUnsafeBytes { write(log, $0.baseAddress, $0.count) }
                }
                return leader
            }
            _ = killpg(result.closureResult, SIGKILL)
            return result.terminationStatus.isSuccess
        } catch {
            return false
        }
    }
}
