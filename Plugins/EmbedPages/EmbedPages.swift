import Foundation
import PackagePlugin

/// Puts a target's page files (`Pages/*.html`, `*.css`, `*.js`) into the
/// target as Swift source, at build time: the pages are in the binary, which
/// is installed alone (nothing is looked up next to it at run time). The
/// files are the pages as the browser gets them; `flowdir-embed` writes each
/// as a raw string literal, `PageFiles.all` lists them.
@main struct EmbedPages: BuildToolPlugin {
    static let kinds = [".html", ".css", ".js"]

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        // The target's own folder, by SwiftPM's convention (Target.directoryURL needs tools 6.1).
        let folder = context.package.directoryURL.appending(path: "Sources/\(target.name)/Pages")
        guard let all = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else {
            throw Failure(description: "EmbedPages: \(target.name) has no page folder \(folder.path); its page files go there")
        }
        let names = all.filter { name in Self.kinds.contains { name.hasSuffix($0) } }.sorted()
        let inputs = names.map { folder.appending(path: $0) }
        let output = context.pluginWorkDirectoryURL.appending(path: "PageFiles.swift")
        return [.buildCommand(displayName: "Embedding the \(names.count) page files of \(target.name)",
                              executable: try context.tool(named: "flowdir-embed").url,
                              arguments: [output.path] + inputs.map(\.path),
                              inputFiles: inputs, outputFiles: [output])]
    }
}
