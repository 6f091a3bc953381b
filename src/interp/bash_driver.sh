# The bash context driver: one persistent shell per context. Each request is
# one line on stdin that, eval'd, sets __abx_code (the code, after the
# execution's env_vars) and __abx_restore (undoes those env_vars). Output is
# the code's own stdout/stderr; protocol lines carry the token prefix.
__abx_token=$ABX_INTERP_TOKEN
unset ABX_INTERP_TOKEN
exec {__abx_requests}<&0 </dev/null # the code must not read the requests
__abx_count=0
while IFS= read -r -u "$__abx_requests" __abx_request; do
  __abx_count=$((__abx_count + 1))
  printf '%s{"type":"number_of_executions","execution_count":%d}\n' "$__abx_token" "$__abx_count"
  eval "$__abx_request"
  eval "$__abx_code"
  __abx_status=$?
  eval "$__abx_restore"
  # As E2B's bash kernel (bash_kernel) reports it: no name, the status as value.
  if [ "$__abx_status" -ne 0 ]; then
    printf '%s{"type":"error","name":"","value":"%d","traceback":""}\n' "$__abx_token" "$__abx_status"
  fi
  printf '%s{"type":"end_of_execution"}\n' "$__abx_token"
done
