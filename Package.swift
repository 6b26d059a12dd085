// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "flowdir",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "flowdir", targets: ["flowdir"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
    ],
    targets: [
        // Values and rules, no I/O.
        .target(name: "FlowdirCore"),
        // Text (YAML, JSON, JSONC) → Core model, keeping line/column marks.
        .target(name: "FlowdirTemplates", dependencies: ["FlowdirCore", "CYaml"]),
        // libyaml from Debian (apt libyaml-dev): its events, composed by FlowdirTemplates.
        .systemLibrary(name: "CYaml", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        // libgit2 from Debian (apt libgit2-dev); the shim wraps its variadic calls.
        .systemLibrary(name: "CLibGit2", pkgConfig: "libgit2", providers: [.apt(["libgit2-dev"])]),
        // Linux calls Swift's Glibc module leaves out (posix_spawn's _np actions, pidfd_open, pipe2, epoll).
        .systemLibrary(name: "CFlowdirSys"),
        // Adapters for the seams Core declares: files, git, inotify, processes.
        .target(name: "FlowdirIO", dependencies: [
            "FlowdirCore", "FlowdirTemplates", "CLibGit2", "CFlowdirSys",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The engine loop: gating, queues, runs, commits.
        .target(name: "FlowdirRuntime", dependencies: [
            "FlowdirCore", "FlowdirTemplates", "FlowdirIO",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        // The HTTP side, one target per product (Hummingbird). `flowdir serve`'s pages and their API,
        // with the webhook receiver `flowdir watch` runs (docs/serve.md).
        // The pages themselves are the files in its Pages/, put into the binary as it is built.
        .target(name: "FlowdirPages", dependencies: [
            "FlowdirCore", "FlowdirTemplates", "FlowdirIO",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], exclude: ["Pages"], plugins: ["EmbedPages"]),
        // Page files → Swift raw string literals (compiled fast; no resource bundle at run time).
        .executableTarget(name: "flowdir-embed"),
        .plugin(name: "EmbedPages", capability: .buildTool(), dependencies: ["flowdir-embed"]),
        // `flowdir jobserver`: a job API (Replicate's) in front of tools and cog models (docs/jobserver.md).
        .target(name: "FlowdirJobServer", dependencies: [
            "FlowdirCore", "FlowdirTemplates", "FlowdirIO",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        .target(
            name: "FlowdirCommands",
            dependencies: [
                "FlowdirCore", "FlowdirTemplates", "FlowdirIO", "FlowdirRuntime", "FlowdirPages", "FlowdirJobServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(name: "flowdir", dependencies: ["FlowdirCommands", "FlowdirRuntime", "FlowdirIO"]),
        // Benchmarks and stress drivers, kept out of the product.
        // swift-subprocess only to measure it against flowdir's own runner (`spawn-timing --swift-subprocess`).
        .executableTarget(name: "flowdir-bench", dependencies: [
            "FlowdirCore", "FlowdirIO", "FlowdirTemplates",
            .product(name: "Subprocess", package: "swift-subprocess"),
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        .target(name: "FlowdirTestSupport", dependencies: ["FlowdirCore", "FlowdirTemplates", "FlowdirIO", "CFlowdirSys"]),
        .testTarget(name: "FlowdirPagesTests", dependencies: [
            "FlowdirPages", "FlowdirIO", "FlowdirCore", "FlowdirTestSupport",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "FlowdirJobServerTests", dependencies: [
            "FlowdirJobServer", "FlowdirIO", "FlowdirCore", "FlowdirTestSupport",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], exclude: ["Python"]),
        .testTarget(name: "FlowdirRuntimeTests", dependencies: ["FlowdirRuntime", "FlowdirIO", "FlowdirCore", "FlowdirTemplates", "FlowdirTestSupport"]),

        .testTarget(name: "FlowdirCoreTests", dependencies: ["FlowdirCore", "FlowdirTestSupport"]),
        .testTarget(name: "FlowdirIOTests", dependencies: ["FlowdirIO", "FlowdirCore", "FlowdirTemplates", "FlowdirTestSupport", "flowdir-bench"], exclude: ["Fixtures"]),
        .testTarget(
            name: "FlowdirTemplatesTests",
            dependencies: ["FlowdirTemplates", "FlowdirCore", "FlowdirIO", "FlowdirTestSupport"],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "FlowdirCommandsTests",
            dependencies: ["FlowdirCommands", "FlowdirCore", "FlowdirTemplates", "FlowdirIO", "FlowdirTestSupport", "flowdir"],
            exclude: ["Python"]
        ),
    ]
)
