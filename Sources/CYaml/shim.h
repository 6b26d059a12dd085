#ifndef FLOWDIR_CYAML_SHIM_H
#define FLOWDIR_CYAML_SHIM_H
/* libyaml from Debian (apt libyaml-dev). flowdir composes its documents
   from libyaml's events itself (FlowdirTemplates' YAMLReader), so it needs
   the C library only: not a Swift YAML package, whose Swift half would
   link all of Foundation, and ICU with it, into the binary. */
#include <yaml.h>
#endif
