import { PageHeader } from '../components.tsx';

export function ApprovalsPage() {
  return (
    <div class="page">
      <PageHeader title="Approvals" subtitle="Tool calls waiting for a person to approve or deny them" />
      <div class="empty">
        <p>
          <strong>Not available yet.</strong> Pending approvals (tool calls listed in an agent's <code>autonomous.approval_required_for</code>) will appear here with
          Approve and Deny buttons once the daemon's approvals API exists.
        </p>
      </div>
    </div>
  );
}
