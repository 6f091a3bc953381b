// The flight records' retention while the daemon runs: a record whose sandbox
// ended over events.retentionHours ago goes within the hour after (a restart
// sweeps too, in restore()). Every sandbox still known keeps its record.
#include <string>
#include <vector>

#include "daemon/event_journal.h"
#include "daemon/service.h"

namespace abx::daemon {

void Service::sweep_event_records() const {
  std::vector<std::string> known;
  for (const SandboxRow& row : list()) known.push_back(row.id);
  for (const SandboxRow& row : dormant_rows()) known.push_back(row.id);
  tenancy_.events->sweep(known);
}

}  // namespace abx::daemon
